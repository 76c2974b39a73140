"""What this process knows of the threads its live thread streams watch (docs/protocol.md#the-live-thread-stream).

Each watched thread has one `ThreadMirror` per process, shared by all the streams of that thread
here: its row (name, metadata), its runs since the oldest stream joined, and its components' states,
read again (`refresh`) when the thread is named by

- the event log's notification (runs/stream/event_log.py: the flusher's NOTIFY names the threads of
  the runs it wrote), heard by the process's one LISTEN connection (runs/stream/follow.py): a run
  started by any process;
- `threads/changes.py` `thread_changed`: a rename or a component's state set, by any process (a NOTIFY
  on PostgreSQL, in the writer's transaction) or this one (after its commit);
- a run starting in this process (runs/stream/feeds.py `Flusher.feed_for`), at once;
- the watcher's tick (runs/control.py), every POLL_SECONDS, in case a notification was lost while
  LISTEN reconnected.

One refresh reads every dirty thread with three statements on a database thread, whatever the number of
streams; a stream that waits holds no connection. Streams compare the mirror with what they sent.
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterable

from django.db import connections, transaction
from django.db.models import Q

from core.db import db_call, log_db_failure
from runs.models import Run
from runs.stream.follow import follower
from runs.stream.statements import channel_notify
from threads.models import Message, Thread

log = logging.getLogger(__name__)

RUNS_KEPT = 50  # the newest runs a mirror keeps: a stream follows them one after the other
# How often the watcher's tick reads the watched threads again anyway: only a notification lost while
# LISTEN reconnected needs it, so seconds, not every tick (three statements each time).
POLL_SECONDS = 5.0


@dataclass
class ThreadMirror:
    thread_id: str
    since: datetime | None  # runs created after this are listed (the oldest stream's newest known run)
    version: int = 0
    thread: Thread | None = None  # None once the thread is gone
    runs: list[tuple[str, datetime]] = field(default_factory=list)  # (run id, created_at), oldest first
    components: dict[str, tuple[str, dict]] = field(default_factory=dict)  # component id -> (message id, state)
    streams: int = 0
    _wake: asyncio.Event = field(default_factory=asyncio.Event)

    async def changed(self) -> None:
        await self._wake.wait()

    async def wait_past(self, version: int) -> None:
        """Returns once the mirror was read again after `version`."""
        while self.version == version:
            await self._wake.wait()

    def _changed(self) -> None:
        self.version += 1
        wake, self._wake = self._wake, asyncio.Event()
        wake.set()


class ThreadWatch:
    def __init__(self) -> None:
        self.mirrors: dict[str, ThreadMirror] = {}
        self._dirty: set[str] = set()
        self._task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._polled_at = 0.0

    def attach(self, thread_id: str, since: datetime | None) -> ThreadMirror:
        """The mirror of `thread_id` for one more stream, which knows the runs up to `since`; a
        refresh follows, so a change made while the stream read its start is not missed."""
        self._loop = asyncio.get_running_loop()
        if connections["default"].vendor == "postgresql":
            # The LISTEN connection that hears other processes. SQLite has one process and no
            # LISTEN: started there, it failed and reconnected every second for as long as it ran.
            follower.ensure_started()
        mirror = self.mirrors.get(thread_id)
        if mirror is None:
            mirror = self.mirrors[thread_id] = ThreadMirror(thread_id, since)
        elif since is None or (mirror.since is not None and since < mirror.since):
            mirror.since = since
        mirror.streams += 1
        self.heard([thread_id])
        return mirror

    def detach(self, mirror: ThreadMirror) -> None:
        mirror.streams -= 1
        if mirror.streams <= 0 and self.mirrors.get(mirror.thread_id) is mirror:
            del self.mirrors[mirror.thread_id]

    def heard(self, ids: Iterable[str]) -> None:
        """Ids named by a notification ("*": all); the watched threads among them are read again."""
        ids = list(ids)
        wanted = set(self.mirrors) if "*" in ids else {i for i in ids if i in self.mirrors}
        if not wanted:
            return
        self._dirty |= wanted
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done() or self._task.get_loop() is not loop:
            self._task = loop.create_task(self._refresh_loop(), context=contextvars.Context())

    def tick(self, now: float) -> None:
        """The watcher's tick (runs/control.py): every POLL_SECONDS, the watched threads are read again."""
        if self.mirrors and now - self._polled_at >= POLL_SECONDS:
            self._polled_at = now
            self.heard(["*"])

    async def stop(self) -> None:
        """Stops a refresh under way (at the process's shutdown, once the streams have closed)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def heard_threadsafe(self, ids: list[str]) -> None:
        """`heard`, from a thread that is not the event loop's (a DRF view, a database thread)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.heard, ids)

    async def _refresh_loop(self) -> None:
        while self._dirty:
            ids, self._dirty = self._dirty, set()
            since = {tid: self.mirrors[tid].since for tid in ids if tid in self.mirrors}
            if not since:
                continue
            try:
                read = await db_call(threads_read, since=since)
            except Exception as exc:  # noqa: BLE001 - the watcher's next tick asks again
                log_db_failure("Thread streams: reading the watched threads failed", exc)
                continue
            for thread_id, (thread, runs, components) in read.items():
                mirror = self.mirrors.get(thread_id)
                if mirror is not None:
                    if len(runs) > RUNS_KEPT:
                        mirror.since = runs[-RUNS_KEPT - 1][1]  # the next read starts at what is kept
                    mirror.thread, mirror.runs, mirror.components = thread, runs[-RUNS_KEPT:], components
                    mirror._changed()


def threads_read(*, since: dict[str, datetime | None]) -> dict[str, tuple[Thread | None, list, dict]]:
    """For each thread: its row (None when gone), its runs created after `since[thread]` (all when None),
    oldest first, and its components' states. Three statements for all the threads."""
    ids = list(since)
    threads = {t.id: t for t in Thread.objects.filter(id__in=ids)}
    runs_of: dict[str, list] = {tid: [] for tid in ids}
    recent = Q()
    for tid, after in since.items():
        recent |= Q(thread_id=tid, created_at__gt=after) if after is not None else Q(thread_id=tid)
    for run_id, thread_id, created in (Run.objects.filter(recent).order_by("created_at")
                                       .values_list("id", "thread_id", "created_at")):
        runs_of[thread_id].append((run_id, created))
    components: dict[str, dict] = {tid: {} for tid in ids}
    for message_id, thread_id, states in (Message.objects.filter(thread_id__in=ids)
                                          .exclude(component_state={}).order_by("created_at")
                                          .values_list("id", "thread_id", "component_state")):
        for component_id, state in (states or {}).items():
            components[thread_id][component_id] = (message_id, state)
    return {tid: (threads.get(tid), runs_of[tid], components[tid]) for tid in ids}


thread_watch = ThreadWatch()


def thread_changed_notify(thread_id: str) -> None:
    """Registered with threads/changes.py (runs/apps.py): tells the thread streams of every process that
    the thread changed. On PostgreSQL a NOTIFY in the writer's transaction (delivered at its commit);
    this process's streams after the commit."""
    connection = connections["default"]
    if connection.vendor == "postgresql":
        channel_notify(thread_id)
    transaction.on_commit(lambda: thread_watch.heard_threadsafe([thread_id]))
