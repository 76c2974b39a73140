"""Following a run that streams in another process, through PostgreSQL alone (docs/protocol.md#resumable-runs).

Each process that has readers of runs streaming elsewhere keeps one `Feed` mirror per such run
(runs/stream/feeds.py), shared by all its readers of that run. One LISTEN connection per process
(DATABASE_LISTEN_URL, straight to PostgreSQL: a transaction-pooling proxy cannot hold a LISTEN; it
is not one of the bounded pool's connections) hears the event log's notifications, which name the runs
that got new rows; when one of them is followed here, one poll (runs/stream/event_log.py `EventLogConnection`)
reads the new rows of *all* the runs followed here (one query per wake-up, whatever the number of readers), and the mirrors wake
their readers. The watcher's tick also polls while anything is followed, so a notification lost
while the LISTEN connection was being re-established delays events by a tick at most.

On SQLite there is one process: every run that streams does so here, and its feed serves.
"""
from __future__ import annotations

import asyncio
import contextvars
import logging

import psycopg
from django.conf import settings
from django.db import connection

from core.db import db_call, log_db_failure
from runs.stream.event_log import event_log_connection, event_log_read
from runs.stream.feeds import KEEP_ALIVE, Feed, changed_within, flusher, frame, read
from runs.stream.statements import channel_listen

log = logging.getLogger(__name__)


class Follower:
    def __init__(self) -> None:
        self.mirrors: dict[str, Feed] = {}
        self._readers: dict[str, int] = {}
        self._wanted: asyncio.Event | None = None
        # What the next poll reads: the followed runs a notification named since the last, or all of
        # them (`_all`: a new LISTEN, the watcher's tick; a failed poll's runs are named again). Reading all of them at each
        # notification made a process that followed 1,000 runs read 1,000 runs' index ~16 times a
        # second for the ~50 each notification names: 17 ms a poll, a third of PostgreSQL's CPU.
        self._named: set[str] = set()
        self._all = False
        self._tasks: list[asyncio.Task] = []
        # Called with the ids each notification names ("*": any), for the live thread streams
        # (runs/stream/thread_watch.py), which share this LISTEN connection.
        self.listeners: list = []

    def attach(self, run_id: str, after: int) -> Feed:
        """The mirror of `run_id` for one more reader (created after id `after` when there is none);
        pair with `detach`."""
        self._ensure_started()
        mirror = self.mirrors.get(run_id)
        if mirror is None or (mirror.ended and not mirror.covers(after)):
            mirror = Feed(run_id, after=after)
            self.mirrors[run_id] = mirror
            self.wake([run_id])
        self._readers[run_id] = self._readers.get(run_id, 0) + 1
        return mirror

    def detach(self, run_id: str, mirror: Feed) -> None:
        left = self._readers.get(run_id, 0) - 1
        if left > 0:
            self._readers[run_id] = left
            return
        self._readers.pop(run_id, None)
        if self.mirrors.get(run_id) is mirror:
            del self.mirrors[run_id]

    async def stop(self) -> None:
        """Stops the poll and LISTEN tasks (at the process's shutdown); the LISTEN connection closes."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def wake(self, run_ids: list[str] | None = None) -> None:
        """Asks for a poll of the followed runs `run_ids`, or of every one (coalesced: one at a time,
        none queued twice)."""
        if run_ids is None:
            self._all = True
        else:
            self._named.update(run_ids)
        if self._wanted is not None:
            self._wanted.set()

    def ensure_started(self) -> None:
        """Starts the poll and LISTEN tasks on the running loop unless they run there already."""
        self._ensure_started()

    def _ensure_started(self) -> None:
        loop = asyncio.get_running_loop()
        if self._tasks and not any(t.done() for t in self._tasks) and self._tasks[0].get_loop() is loop:
            return
        for task in self._tasks:
            task.cancel()
        self._wanted = asyncio.Event()
        # Fresh contexts: these tasks serve the whole process, not the request that started them.
        self._tasks = [loop.create_task(self._poll_loop(), context=contextvars.Context()),
                       loop.create_task(self._listen_loop(), context=contextvars.Context())]

    async def _poll_loop(self) -> None:
        while True:
            await self._wanted.wait()
            self._wanted.clear()
            named, every = self._named, self._all
            self._named, self._all = set(), False
            mirrors = self.mirrors.items() if every else ((rid, self.mirrors.get(rid)) for rid in named)
            cursors = {rid: m.last_seq for rid, m in mirrors if m is not None and not m.ended}
            if not cursors:
                continue
            try:
                events, over = await event_log_connection.poll(cursors)
            except Exception as exc:  # noqa: BLE001 - the watcher's next tick asks again
                log_db_failure("Run events: reading the event log failed", exc)
                self._named.update(cursors)
                continue
            for run_id, rows in events.items():
                mirror = self.mirrors.get(run_id)
                if mirror is not None:
                    for seq, data, final in rows:
                        mirror.add_sealed(seq, data.encode(), final)
            for run_id in over:
                mirror = self.mirrors.get(run_id)
                if mirror is not None:
                    mirror.end()

    async def _listen_loop(self) -> None:
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(settings.DATABASE_LISTEN_URL,
                                                                 autocommit=True) as conn:
                    await channel_listen(conn)
                    self.wake()  # rows written before the LISTEN took effect
                    self._tell(["*"])
                    async for note in conn.notifies():
                        ids = note.payload.split(",")
                        if note.payload == "*":
                            self.wake()
                        else:
                            followed = [rid for rid in ids if rid in self.mirrors]
                            if followed:
                                self.wake(followed)
                        self._tell(ids)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - reconnect; the watcher's ticks poll meanwhile
                log.warning("Run events: the LISTEN connection failed (%s); reconnecting", type(exc).__name__)
                await asyncio.sleep(1.0)


    def _tell(self, ids: list[str]) -> None:
        for listener in self.listeners:
            listener(ids)


follower = Follower()

# How long a reader's Last-Event-ID may run ahead of the event log of a run streaming in another
# process before it counts as past the run's end: that process's stream sends events up to a flush
# interval before it logs them (longer when it or the database is busy).
LOG_LAG_GRACE = 2.0


async def event_log_reaches(run_id: str, seq: int) -> int:
    """Waits up to LOG_LAG_GRACE for the event log of `run_id` (streaming in another process) to hold
    id `seq`; returns the last id seen, `seq` or more when it came. Through the process's mirror of
    the run, so it adds no query of its own."""
    mirror = follower.attach(run_id, seq - 1)
    try:
        async with asyncio.timeout(LOG_LAG_GRACE):
            while mirror.last_seq < seq and not mirror.ended:
                await mirror.changed()
    except TimeoutError:
        pass
    finally:
        follower.detach(run_id, mirror)
    return mirror.last_seq


REPLAY_PAGE = 500  # events read from the log at a time by a reader that joins behind what memory holds


async def events_follow(run_id: str, after: int, *, join_live: bool = False):
    """The SSE frames of run `run_id` after id `after`: replayed, then live until its last event.

    A reader that joins behind what this process holds in memory reads the difference from the
    event log first, a page at a time; then it reads on from the run's feed when the run streams in
    this process, else from the process's mirror of it (PostgreSQL). Once live, a reader that falls
    behind what memory holds is cut (runs/stream/feeds.py `read`).

    `join_live`: the caller found that the logged events after `after` of a run that has not ended
    are few enough for the mirror's buffer. When the run streams in another process, the reader then
    follows the mirror at once: the mirror's poll reads those events for every reader joining then,
    in one query, instead of a read of the log per reader through the database pool.
    """
    cursor = after
    mirror: Feed | None = None
    try:
        while True:
            feed = mirror or flusher.feeds.get(run_id)
            if feed is None and connection.vendor == "postgresql":
                existing = follower.mirrors.get(run_id)
                if (existing is not None and existing.covers(cursor)) or join_live:
                    feed = mirror = follower.attach(run_id, cursor)
            if feed is not None and feed.covers(cursor):
                async for chunk in read(feed, cursor):
                    yield chunk
                return
            upto = feed.first_seq - 1 if feed is not None else None
            rows = await db_call(event_log_read, run_id=run_id, after=cursor, upto=upto, limit=REPLAY_PAGE)
            if rows:
                yield b"".join(frame(seq, data.encode()) for seq, data, _ in rows)
                cursor = rows[-1][0]
                if rows[-1][2]:
                    return  # the run's last event
                if len(rows) == REPLAY_PAGE:
                    continue
            if feed is None:
                if connection.vendor != "postgresql":
                    return  # one process: the run does not stream here, so the log holds all there is
                # Caught up with the log: follow the run from here through this process's mirror.
                feed = mirror = follower.attach(run_id, cursor)
            elif not rows:
                if feed.ended:
                    return
                # What lies between cursor and the feed is not in the log yet: wait for the run.
                if not await changed_within(feed, settings.HEARTBEAT_SECONDS):
                    yield KEEP_ALIVE
    finally:
        if mirror is not None:
            follower.detach(run_id, mirror)
