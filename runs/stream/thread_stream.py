"""The live thread stream, `GET /v1/threads/{threadId}/events` (docs/protocol.md#the-live-thread-stream):
every /v1 run of the thread as it happens, from any process, with the thread's renames and its
components' state changes, for any number of readers.

A fresh join begins with `MESSAGES_SNAPSHOT` (the stored messages, less those the run in progress has
produced so far) and `CUSTOM tambo.thread.updated` (the thread); then the run in progress, if any, from
its first event, and every later run from its first event, each to its end, one after the other (a
thread runs one at a time), each after a new `MESSAGES_SNAPSHOT` that holds its user message. A run's frames are its own (runs/stream/follow.py `events_follow`), with
their ids made `<runId>:<seq>`: `Last-Event-ID` names a run and an event of it, and a reader that
sends one gets that run's events after it and the later runs', with no snapshot, as long as they can
be replayed (RUN_REPLAY_SECONDS); otherwise it gets a fresh join. The thread's own events carry no id.
"""
from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass
from datetime import datetime
from typing import AsyncIterator

from django.conf import settings

from clientsdk import wire
from core.db import db_call
from core.problems import validation_error
from projects.auth import Principal
from runs.models import Run, RunEvent
from runs.stream.event_log import replay_ended
from runs.stream.feeds import KEEP_ALIVE
from runs.stream.follow import events_follow
from runs.stream.thread_watch import ThreadMirror, thread_watch, threads_read
from threads import selectors as thread_selectors
from threads.models import Message, RunStatus, Thread
from threads.presenters import message_to_wire, thread_to_wire

THREAD_UPDATED = "tambo.thread.updated"
COMPONENT_STATE = "tambo.component.state"
RESUME_ID = re.compile(r"^(run_[A-Za-z0-9_-]{1,36}):(\d{1,10})$")
_ID_LINE = re.compile(rb"(?m)^id: (\d+)$")


@dataclass
class ThreadStart:
    """What a stream begins with, read in one database call before the answer starts (so a 404 is a 404)."""

    thread_id: str
    opening: bytes  # the frames sent first: the snapshot (fresh joins) and the thread
    follow: list[tuple[str, int, bool]]  # the runs to read, in order: (run id, after event id, snapshot first)
    newest_run: datetime | None  # the newest run the stream knows of: later ones are new
    thread_key: tuple  # (name, metadata) sent
    components: dict[str, tuple[str, dict]]  # component id -> (message id, state) sent


def resume_point(raw: str | None) -> tuple[str, int] | None:
    """`Last-Event-ID` (or `?after=`) parsed: (run id, event id); 400 for anything else."""
    if raw is None or not raw.strip():
        return None
    match = RESUME_ID.match(raw.strip())
    if match is None:
        raise validation_error("Last-Event-ID must be an id of this stream (<runId>:<eventId>).",
                               field="Last-Event-ID")
    return match.group(1), int(match.group(2))


def frame_of(event: dict) -> bytes:
    event.setdefault("timestamp", int(time.time() * 1000))
    return b"data: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n"


def _thread_frame(thread: Thread) -> bytes:
    return frame_of({"type": "CUSTOM", "name": THREAD_UPDATED, "value": thread_to_wire(thread).wire()})


def _component_frame(component_id: str, message_id: str, state: dict) -> bytes:
    return frame_of({"type": "CUSTOM", "name": COMPONENT_STATE,
                     "value": {"messageId": message_id, "componentId": component_id, "state": state}})


def thread_stream_start(*, principal: Principal, thread_id: str, user_key_raw: object,
                        resume: tuple[str, int] | None) -> ThreadStart:
    """The requester's thread (404 THREAD_NOT_FOUND as for reading it) and what its stream begins with."""
    user_key = principal.user_key_checked(user_key_raw)
    thread = thread_selectors.thread_get(project=principal.project, user_key=user_key, thread_id=thread_id)
    follow = _resumed(thread, *resume) if resume is not None else None
    opening = []
    if follow is None:
        current = thread.current_run_id if thread.run_status != RunStatus.IDLE else None
        opening.append(snapshot_frame(thread_id=thread.id, current=current))
        follow = [(current, 0, False)] if current else []
    newest = Run.objects.filter(thread_id=thread.id).order_by("-created_at").values_list("created_at", flat=True).first()
    _, _, components = threads_read(since={thread.id: newest})[thread.id]
    opening.append(_thread_frame(thread))
    return ThreadStart(thread_id=thread.id, opening=b"".join(opening), follow=follow, newest_run=newest,
                       thread_key=(thread.name, thread.metadata), components=components)


def _resumed(thread: Thread, run_id: str, after: int) -> list[tuple[str, int, bool]] | None:
    """The runs to read after event `after` of run `run_id`: that one (unless it was read to its end)
    and the thread's later runs; None when one of them can no longer be replayed (a fresh join then)."""
    named = Run.objects.filter(id=run_id, thread_id=thread.id).only("id", "status", "finished_at", "created_at").first()
    if named is None or replay_ended(named):
        return None
    later = list(Run.objects.filter(thread_id=thread.id, created_at__gt=named.created_at).order_by("created_at")
                 .only("id", "status", "finished_at"))
    if any(replay_ended(run) for run in later):
        return None
    final = RunEvent.objects.filter(run_id=run_id, final=True).values_list("seq", flat=True).first()
    follow = [] if final is not None and after >= final else [(run_id, after, False)]
    return follow + [(run.id, 0, True) for run in later]


def snapshot_frame(*, thread_id: str, current: str | None) -> bytes:
    """MESSAGES_SNAPSHOT of the stored messages, less what run `current` produced (its events follow
    from its first, so nothing shows twice): its assistant messages and their tool results. Sent
    first, and again before each run read from its first event (it holds that run's user message)."""
    messages = list(Message.objects.filter(thread_id=thread_id).order_by("created_at", "id"))
    dropped = {m.id for m in messages if current and m.run_id == current and m.role == Message.Role.ASSISTANT}
    kept = [m for m in messages if m.id not in dropped and m.parent_message_id not in dropped]
    return frame_of({"type": "MESSAGES_SNAPSHOT", "threadId": thread_id,
                     "messages": [message_to_wire(m).wire() for m in kept]})


async def thread_follow(start: ThreadStart) -> AsyncIterator[bytes]:
    """The stream's frames until the client leaves (or the thread is deleted). Waits on the thread's
    mirror (runs/stream/thread_watch.py) and the run it reads; holds no database connection meanwhile."""
    mirror = thread_watch.attach(start.thread_id, start.newest_run)
    change = asyncio.ensure_future(mirror.wait_past(mirror.version))
    queue = list(start.follow)
    known = {run_id for run_id, _, _ in queue}
    newest, sent_thread, sent_components = start.newest_run, start.thread_key, dict(start.components)
    run_id, events, chunk = None, None, None
    try:
        yield start.opening
        while True:
            if events is None and queue:
                run_id, after, snapshot = queue.pop(0)
                if snapshot:
                    yield await db_call(snapshot_frame, thread_id=start.thread_id, current=run_id)
                events = events_follow(run_id, after)
            if events is not None and chunk is None:
                chunk = asyncio.ensure_future(events.__anext__())
            done, _ = await asyncio.wait([change] + ([chunk] if chunk else []), timeout=settings.HEARTBEAT_SECONDS,
                                         return_when=asyncio.FIRST_COMPLETED)
            if not done:
                yield KEEP_ALIVE
                continue
            if chunk in done:
                task, chunk = chunk, None
                try:
                    data = task.result()
                except StopAsyncIteration:
                    events = None
                    continue
                out, lagged = _renumbered(data, run_id)
                yield out
                if lagged:
                    return
            if change in done:
                change = asyncio.ensure_future(mirror.wait_past(mirror.version))
                if mirror.thread is None:
                    return  # the thread was deleted
                key = (mirror.thread.name, mirror.thread.metadata)
                if key != sent_thread:
                    sent_thread = key
                    yield _thread_frame(mirror.thread)
                for component_id, (message_id, state) in mirror.components.items():
                    if sent_components.get(component_id) != (message_id, state):
                        sent_components[component_id] = (message_id, state)
                        yield _component_frame(component_id, message_id, state)
                for new_run, created in mirror.runs:
                    if new_run not in known and (newest is None or created > newest):
                        known.add(new_run)
                        newest = created
                        queue.append((new_run, 0, True))
    finally:
        for task in (change, chunk):
            if task is not None:
                task.cancel()
        if events is not None:
            await asyncio.gather(*(t for t in (chunk,) if t is not None), return_exceptions=True)
            try:
                await events.aclose()
            except RuntimeError:  # noqa: PERF203 - already closed by the cancelled read
                pass
        thread_watch.detach(mirror)


def _renumbered(data: bytes, run_id: str) -> tuple[bytes, bool]:
    """A run's frames with the thread stream's ids (`<runId>:<seq>`); a `tambo.stream.lagged` event
    (the reader fell behind the run) is given the id to resume from in the same form, and ends the stream."""
    if b"\nid: " not in b"\n" + data and wire.STREAM_LAGGED.encode() in data:
        event = json.loads(data[len(b"data: "):].strip())
        event["value"] = {"lastEventId": f"{run_id}:{event['value']['lastEventId']}"}
        return frame_of(event), True
    prefix = b"id: " + run_id.encode() + b":"
    return _ID_LINE.sub(lambda m: prefix + m.group(1), data), False
