"""The run endpoints: async views that check a request, then stream the advance loop as SSE.

The view only decodes, calls services and writes bytes. The loop runs in its own task and feeds
the run's numbered events (runs/stream/feeds.py), so a client that goes away does not tear down the run's
bookkeeping: the run is cancelled (unless it already paused for client tools, or the request said
`onDisconnect: "continue"`: then it runs to its end with no reader) and still stored and unlocked.
"""
from __future__ import annotations

import asyncio
import logging

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from clientsdk import wire
from core.db import db_call
from core.sse import sse_response
from projects.auth import principal_aresolve
from projects.config import project_settings
from providers import get_provider
from runs import services
from runs.attachments import run_content_check
from runs.control import RunControl, watcher
from runs import selectors
from runs.loop import advance
from runs.models import Run
from runs.start import ContentToCheck, run_start_request
from runs.stream.feeds import Feed, flusher, read
from runs.stream.guard import encode_into

log = logging.getLogger(__name__)


@csrf_exempt
@require_http_methods(["POST"])
async def create_thread_run(request: HttpRequest) -> HttpResponse:
    return await _start(request, thread_id=None)


@csrf_exempt
@require_http_methods(["POST"])
async def create_run(request: HttpRequest, thread_id: str) -> HttpResponse:
    return await _start(request, thread_id=thread_id)


async def _start(request: HttpRequest, thread_id: str | None) -> HttpResponse:
    background = _prefers_async(request)
    # Authentication, the body and the start: one database call (runs/start.py); a body with
    # images or files is checked (and its MCP resources read) off the lock first, then started.
    # A refusal is a Problem raised before the stream begins, answered by ProblemMiddleware.
    started = await run_start_shielded(run_start_request, request=request, thread_id=thread_id,
                                       background=background)
    if isinstance(started, ContentToCheck):
        await run_content_check(project=started.principal.project, body=started.body)
        started = await run_start_shielded(services.run_start, principal=started.principal,
                                           body=started.body, thread_id=thread_id, tools=started.tools,
                                           background=background)
    if background or started.body.background:
        run_unread(started)
        response = JsonResponse(run_to_wire(started.run, thread_id=started.thread.id).wire(), status=202)
        response["Location"] = run_path(started.thread.id, started.run.id)
    else:
        response = stream_run(started)
    if thread_id is None:
        response["X-Thread-Id"] = started.thread.id
    response["X-Run-Id"] = started.run.id
    return response


def _prefers_async(request: HttpRequest) -> bool:
    """`Prefer: respond-async` (RFC 7240), the header's way of `background: true`."""
    prefer = request.headers.get("Prefer", "")
    return any(part.split(";")[0].strip().lower() == "respond-async" for part in prefer.split(","))


def outlives_disconnect(started: services.StartedRun) -> bool:
    """Whether the run goes on when its client goes away: the request's `onDisconnect`, else the
    project's `runsOutliveDisconnect` (docs/projects.md); a background run always does."""
    if started.body.background:
        return True
    if started.body.on_disconnect is not None:
        return started.body.on_disconnect == "continue"
    return project_settings(started.thread.project).runs_outlive_disconnect


def run_path(thread_id: str, run_id: str) -> str:
    return f"/v1/threads/{thread_id}/runs/{run_id}"


def run_to_wire(run: Run, *, thread_id: str) -> wire.RunInfo:
    error = wire.RunError(code=run.error_code, message=run.error_message) if run.error_code else None
    return wire.RunInfo(id=run.id, thread_id=thread_id, status=run.status,
                        events_url=run_path(thread_id, run.id) + "/events", previous_run_id=run.previous_run_id,
                        model=run.model, error=error, created_at=run.created_at, started_at=run.started_at,
                        finished_at=run.finished_at)


def stream_run(started: services.StartedRun, adapt=None) -> StreamingHttpResponse:
    """The SSE answer streaming the advance loop of a started run; `adapt`, if given, maps its events
    (the AG-UI endpoint's, runs/agui/views.py).

    The events go through the run's feed (runs/stream/feeds.py), which numbers them: this answer is one reader
    of it. A /v1 run's feed is also written to the event log, for the events route; an AG-UI run's
    stream is numbered too but not logged (the events route serves /v1 runs' events).
    """
    control = RunControl(started.run.id)
    watcher.register(control)
    logged = adapt is None
    feed = (flusher.feed_for(started.run.id, started.thread.id, encrypt=started.thread.sealed) if logged
            else Feed(started.run.id))
    keep_going = logged and outlives_disconnect(started)
    reading = asyncio.Event()
    events = advance(started, control, started.models or get_provider())
    producer = _launch(_produce(adapt(events) if adapt else events, feed, control, reading, keep_going))
    response = sse_response(_write(feed, producer, control, reading, keep_going))
    response["X-Run-Id"] = started.run.id
    return response


def run_unread(started: services.StartedRun, *, after: int = 0) -> None:
    """Runs a started /v1 run to its end with no reader of its own: a background run
    (docs/protocol.md#background-runs), or one taken over from another process
    (runs/recovery/takeover.py), numbered after the `after` events that process logged. Its events go
    to its feed and the event log only, for the events routes of any process."""
    control = RunControl(started.run.id)
    watcher.register(control)
    feed = flusher.feed_for(started.run.id, started.thread.id, after=after, encrypt=started.thread.sealed)
    _launch(_produce(advance(started, control, started.models or get_provider()), feed, control, None, True))


_running: set[asyncio.Task] = set()  # strong references, so the loop does not drop a run mid-way


def _launch(coroutine) -> asyncio.Task:
    task = asyncio.ensure_future(coroutine)
    _running.add(task)
    task.add_done_callback(_running.discard)
    return task


async def run_start_shielded(start_run, *, background: bool = False, logged: bool = True,
                             **kwargs) -> services.StartedRun:
    """`start_run(**kwargs)` (services.run_start, or the AG-UI one), which takes the lock. If the client
    leaves meanwhile (this coroutine is cancelled), the run it started is cancelled through the normal
    path once the lock is taken, so the thread is idle again at once instead of when the lease expires
    (or, when a /v1 run outlives its client, `outlives_disconnect` or `background`, it runs to its end with
    no reader; `logged` False, an AG-UI run, never does: its events are not logged for anyone to read).
    A start that fails rolls its whole transaction back (lock included: services.run_start)."""
    start = asyncio.ensure_future(db_call(start_run, **kwargs))
    try:
        return await asyncio.shield(start)
    except asyncio.CancelledError:
        start.add_done_callback(lambda done: _orphaned(done, background, logged))
        raise


def _orphaned(start: asyncio.Future, background: bool, logged: bool) -> None:
    if start.cancelled() or start.exception() is not None:
        return  # a rejected request took no lock
    started = start.result()
    if isinstance(started, ContentToCheck):
        return  # parsed, not started: nothing to cancel
    if logged and (background or outlives_disconnect(started)):
        run_unread(started)
        return
    control = RunControl(started.run.id)
    watcher.register(control)  # its lease renewed until it ends (runs/starting.py)
    control.cancel("disconnected")
    _launch(_produce(advance(started, control, started.models or get_provider()), Feed(started.run.id), control,
                     None, False))


# How long a started run waits for its client to begin reading before it counts as a disconnect.
READ_START_TIMEOUT = 10.0


async def _produce(events, feed: Feed, control: RunControl, reading: asyncio.Event | None,
                   keep_going: bool) -> None:
    try:
        if reading is not None:
            # The model starts once the answer's headers are out: Django's response path then does
            # not compete with a busy producer, and a client that never reads cancels the run
            # (unless it asked for the run to go on without it).
            try:
                await asyncio.wait_for(reading.wait(), READ_START_TIMEOUT)
            except asyncio.TimeoutError:
                if not keep_going:
                    control.cancel("disconnected")
        # Encoded here, one by one, so a failure to encode goes back into the run (runs/stream/guard.py).
        await encode_into(events, feed.append)
    finally:
        feed.end()
        watcher.unregister(control)
        control.ended.set()


async def _write(feed: Feed, producer: asyncio.Task, control: RunControl, reading: asyncio.Event,
                 keep_going: bool):
    finished = False
    reading.set()
    try:
        async for chunk in read(feed, 0):
            yield chunk
        finished = True
    finally:
        if not finished and not keep_going:
            # The client went away while the run was producing: that is a cancel (docs/protocol.md#the-event-stream).
            control.cancel("disconnected")
            # Let the loop store the partial message and release the lock on its own.
            await asyncio.shield(producer)


@csrf_exempt
@require_http_methods(["GET", "DELETE"])
async def run_detail(request: HttpRequest, thread_id: str, run_id: str) -> HttpResponse:
    """GET: the run's status (docs/protocol.md#background-runs); DELETE: cancels it."""
    if request.method == "DELETE":
        return await cancel_run(request, thread_id, run_id)
    principal = await principal_aresolve(request)
    run = await db_call(selectors.run_get, principal=principal, thread_id=thread_id, run_id=run_id,
                        user_key_raw=request.GET.get("userKey"))
    return JsonResponse(run_to_wire(run, thread_id=thread_id).wire())


async def cancel_run(request: HttpRequest, thread_id: str, run_id: str) -> HttpResponse:
    principal = await principal_aresolve(request)
    await db_call(services.run_cancel_request, principal=principal, thread_id=thread_id, run_id=run_id,
                  user_key_raw=request.GET.get("userKey"))
    # If this process streams the run, stop it now; otherwise its own watcher sees the flag.
    watcher.cancel_local(run_id, "cancelled")
    # The answer comes once the run's end and partial message are stored, so every read after it sees
    # them (docs/protocol.md#the-event-stream); a run that takes longer to end is still cancelling (202).
    ended = await watcher.end_wait(thread_id=thread_id, run_id=run_id, timeout=settings.RUN_CANCEL_WAIT_SECONDS)
    result = wire.CancelResult(run_id=run_id, status="cancelled" if ended else "cancelling")
    return JsonResponse(result.wire(), status=200 if ended else 202)
