"""The run endpoints: async views that check a request, then stream the advance loop as SSE.

The view only decodes, calls services and writes bytes. The loop runs in its own task and feeds
a queue, so a client that goes away does not tear down the run's bookkeeping: the run is
cancelled (unless it already paused for client tools) and still stored and unlocked properly.
"""
from __future__ import annotations

import asyncio
import logging

from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from clientsdk import wire
from core.db import db_call
from core.input_guard import request_json
from core.problems import Problem, response_for
from core.sse import sse_response
from core.validation import parse_body
from projects.auth import aresolve_principal
from providers import get_provider
from runs import services
from runs.control import RunControl, watcher
from runs.guard import encode_into
from runs.loop import advance
from runs.sse import join_encoded

log = logging.getLogger(__name__)
_END = object()


@csrf_exempt
@require_http_methods(["POST"])
async def create_thread_run(request: HttpRequest) -> HttpResponse:
    return await _start(request, thread_id=None)


@csrf_exempt
@require_http_methods(["POST"])
async def create_run(request: HttpRequest, thread_id: str) -> HttpResponse:
    return await _start(request, thread_id=thread_id)


async def _start(request: HttpRequest, thread_id: str | None) -> HttpResponse:
    try:
        principal = await aresolve_principal(request)
        model = wire.CreateThreadWithRunBody if thread_id is None else wire.CreateRunBody
        body = parse_body(model, request_json(request))
        started = await run_start_shielded(services.run_start, principal=principal, body=body, thread_id=thread_id)
    except Problem as problem:
        return response_for(problem, request.path)
    response = stream_run(started)
    if thread_id is None:
        response["X-Thread-Id"] = started.thread.id
    return response


def stream_run(started: services.StartedRun, adapt=None) -> StreamingHttpResponse:
    """The SSE answer streaming the advance loop of a started run; `adapt`, if given, maps its events
    (the AG-UI endpoint's, runs/agui_views.py)."""
    control = RunControl(started.run.id)
    watcher.register(control)
    queue: asyncio.Queue = asyncio.Queue()
    reading = asyncio.Event()
    events = advance(started, control, get_provider())
    producer = asyncio.create_task(_produce(adapt(events) if adapt else events, queue, control, reading))
    response = sse_response(_write(queue, producer, control, reading))
    response["X-Run-Id"] = started.run.id
    return response


_orphans: set[asyncio.Task] = set()  # strong references, so the loop does not drop them mid-run


async def run_start_shielded(start_run, **kwargs) -> services.StartedRun:
    """`start_run(**kwargs)` (services.run_start, or the AG-UI one), which takes the lock. If the client
    leaves meanwhile (this coroutine is cancelled), the run it started is cancelled through the normal
    path once the lock is taken, so the thread is idle again at once instead of when the lease expires.
    A start that fails rolls its whole transaction back (lock included: services.run_start)."""
    start = asyncio.ensure_future(db_call(start_run, **kwargs))
    try:
        return await asyncio.shield(start)
    except asyncio.CancelledError:
        start.add_done_callback(_cancel_orphan)
        raise


def _cancel_orphan(start: asyncio.Future) -> None:
    if start.cancelled() or start.exception() is not None:
        return  # a rejected request took no lock
    started = start.result()
    control = RunControl(started.run.id)
    control.cancel("disconnected")
    task = asyncio.ensure_future(_produce(advance(started, control, get_provider()), asyncio.Queue(), control))
    _orphans.add(task)
    task.add_done_callback(_orphans.discard)


# How long a started run waits for its client to begin reading before it counts as a disconnect.
READ_START_TIMEOUT = 10.0


async def _produce(events, queue: asyncio.Queue, control: RunControl, reading: asyncio.Event | None = None) -> None:
    try:
        if reading is not None:
            # The model starts once the answer's headers are out: Django's response path then does
            # not compete with a busy producer, and a client that never reads cancels the run.
            try:
                await asyncio.wait_for(reading.wait(), READ_START_TIMEOUT)
            except asyncio.TimeoutError:
                control.cancel("disconnected")
        # Encoded here, one by one, so a failure to encode goes back into the run (runs/guard.py).
        await encode_into(events, lambda data, event: queue.put_nowait((data, event)))
    finally:
        queue.put_nowait(_END)
        watcher.unregister(control)


async def _write(queue: asyncio.Queue, producer: asyncio.Task, control: RunControl, reading: asyncio.Event):
    finished = False
    reading.set()
    try:
        while not finished:
            chunks = [await queue.get()]
            # Whatever else is ready goes out in the same write; when nothing is, flush at once.
            while not queue.empty():
                chunks.append(queue.get_nowait())
            if chunks[-1] is _END:
                chunks.pop()
                finished = True
            if chunks:
                # Text deltas of one message that queued up while the client was slower than the
                # model go out as one event: fewer bytes, the same text.
                yield join_encoded(chunks)
    finally:
        if not finished:
            # The client went away while the run was producing: that is a cancel (spec section 4).
            control.cancel("disconnected")
            # Let the loop store the partial message and release the lock on its own.
            await asyncio.shield(producer)


@csrf_exempt
@require_http_methods(["DELETE"])
async def cancel_run(request: HttpRequest, thread_id: str, run_id: str) -> HttpResponse:
    try:
        principal = await aresolve_principal(request)
        await db_call(services.run_cancel_request, principal=principal, thread_id=thread_id, run_id=run_id,
                      user_key_raw=request.GET.get("userKey"))
    except Problem as problem:
        return response_for(problem, request.path)
    # If this process streams the run, stop it now; otherwise its own watcher sees the flag.
    watcher.cancel_local(run_id, "cancelled")
    return JsonResponse(wire.CancelResult(run_id=run_id, status="cancelled").wire())
