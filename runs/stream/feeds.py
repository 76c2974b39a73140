"""A run's events in memory, numbered, for its own stream and every reader in this process (docs/protocol.md#resumable-runs).

The process running a run appends each encoded event to the run's `Feed`. Events are *sealed*
(numbered 1, 2, 3 … and framed with their `id:` line) when a reader takes them or the event log is
written, whichever comes first. Text deltas of one message appended since the last seal become one
event then (runs/stream/sse.py `merge_encoded`): a slow reader gets fewer, larger events, and every reader
and the event log see the same events with the same ids.

Memory: a feed keeps its sealed events up to RUN_EVENTS_BUFFER_BYTES, and, once a write of the event
log has failed, those not yet written up to RUN_EVENTS_UNLOGGED_BYTES: while the database is away, the
oldest unwritten events past that are given up (never the newest, so the run's last event still
reaches the log), counted in `Feed.lost` and logged once per run, so an outage costs the log a gap, not
the process its memory. A log that is only slower than the run (SQLite at the watcher's pace, a fast
offline model) loses nothing: the feed keeps what waits for the next write, whatever its size.
Readers take from the feed TAKE_BYTES at a time and hold no other copy.
A reader that falls behind what the feed keeps is cut: it gets one last event,
`CUSTOM tambo.stream.lagged` with `value: {lastEventId}` (the id of the last event it got) and *no*
`id:` line, and its stream ends; it can rejoin from that id through the events route, which
replays from the event log.

The `Flusher` writes the new events of all the runs this process streams to the event log in one
statement at most every RUN_EVENTS_FLUSH_INTERVAL seconds while there are any (runs/stream/event_log.py),
which also wakes readers in other processes (runs/stream/follow.py). The same `Feed` class mirrors a run
that streams in another process: rows read from the log are appended to it already sealed.
"""
from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import time
from typing import AsyncIterator, Callable

from ag_ui.core import BaseEvent, CustomEvent, RunErrorEvent, RunFinishedEvent
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from clientsdk import wire
from core import memory
from core.db import db_call, log_db_failure
from core.runtime import process_runtime
from runs.stream.event_log import event_log_connection, event_log_write
from runs.stream.sse import encode_event, merge_encoded
from threads.sealing import seal_text

log = logging.getLogger(__name__)

MORE, DONE, LAGGED = "more", "done", "lagged"
# The most a reader takes from a feed at a time. What it took is its own copy until the client has
# read it, so this bounds a reader's memory; and a reader that stops reading stops taking, falls
# behind what the feed keeps, and is cut, however much the run had produced when it last took.
TAKE_BYTES = 64 * 1024


def frame(seq: int, data: bytes) -> bytes:
    """An SSE frame with its id: `data` is the JSON after `data: `."""
    return b"id: %d\ndata: %b\n\n" % (seq, data)


def lagged_frame(last_seq: int) -> bytes:
    return encode_event(CustomEvent(name=wire.STREAM_LAGGED, value={"lastEventId": last_seq}))


def _is_final(event: BaseEvent | None) -> bool:
    # No event: the fixed RUN_ERROR of runs/stream/guard.py, sent when even the terminal event failed to encode.
    return event is None or isinstance(event, (RunFinishedEvent, RunErrorEvent))


class Feed:
    """The numbered events of one run: produced here (`append`) or mirrored from the log (`add_sealed`)."""

    def __init__(self, run_id: str, *, logged: bool = False, after: int = 0,
                 on_append: Callable[[], None] | None = None, thread_id: str | None = None):
        self.run_id = run_id
        self.thread_id = thread_id  # named with the run's in the event log's notifications (thread streams)
        self.logged = logged  # its events go to the event log (and may only be dropped once written)
        # Its thread's content is stored encrypted (threads/sealing.py): so are its event log rows.
        self.encrypt = False
        self._on_append = on_append
        self._pending: list[tuple[bytes, BaseEvent | None]] = []
        self._frames: list[bytes] = []  # the sealed frames kept, ids first_seq … last_seq
        self._bytes = 0
        self.first_seq = after + 1
        self.last_seq = after
        self.final_seq: int | None = None
        self.ended = False  # no event will follow last_seq
        self.unlogged: list[tuple[int, str, bool]] = []  # (seq, data, final) not yet in the event log
        self._unlogged_bytes = 0
        self.logged_seq = after
        self.lost = 0  # events given up before the event log could take them (see the module docstring)
        self._lost_seq = after  # the last of them: memory may drop it like a written one
        self.log_down = False  # the last write of the event log failed (the bound applies)
        self._wake = asyncio.Event()
        self._waiting = 0  # readers awaiting `changed()`

    # --- writing ---------------------------------------------------------------------------------

    def append(self, data: bytes, event: BaseEvent | None) -> None:
        """One encoded event of the run (`data` is `data: <json>\\n\\n`), numbered at the next seal."""
        pending = self._pending
        pending.append((data, event))
        if self._waiting:
            self._changed()
        # The flusher hears of a feed's new events once per batch: when its pending events were none
        # (each seal, the flusher's included, empties them; nothing awaits between its clear and seal).
        if len(pending) == 1 and self._on_append is not None:
            self._on_append()

    def seal(self) -> None:
        """Numbers the pending events (merging text deltas ready together) and frames them."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        for data, event in merge_encoded(pending):
            payload = data[6:-2]  # the JSON between `data: ` and the blank line
            self._add(payload, _is_final(event))
        self._trim()

    def add_sealed(self, seq: int, data: bytes, final: bool) -> None:
        """An event read back from the event log (a mirror); events already held are skipped. A mirror
        keeps RUN_EVENTS_BUFFER_BYTES like the run's own feed: its readers that fall further behind
        are cut and resume from the log."""
        if seq <= self.last_seq:
            return
        self._add(data, final, logged=True)
        self._trim()
        self._changed()

    def end(self) -> None:
        """No more events: readers that have everything end."""
        self.seal()
        self.ended = True
        self._changed()
        if self._on_append is not None:
            self._on_append()  # the flusher writes what is left, then forgets the feed

    def _add(self, payload: bytes, final: bool, logged: bool = False) -> None:
        self.last_seq += 1
        framed = frame(self.last_seq, payload)
        self._frames.append(framed)
        self._bytes += len(framed)
        if final:
            self.final_seq = self.last_seq
            self.ended = True
        if self.logged and not logged:
            data = payload.decode()
            self.unlogged.append((self.last_seq, data, final))
            self._unlogged_bytes += len(data)
            if self.log_down:
                self._bound_unlogged()
        elif logged:
            self.logged_seq = self.last_seq

    def _bound_unlogged(self) -> None:
        limit = settings.RUN_EVENTS_UNLOGGED_BYTES
        drop = 0
        while self._unlogged_bytes > limit and drop < len(self.unlogged) - 1:
            self._unlogged_bytes -= len(self.unlogged[drop][1])
            drop += 1
        if not drop:
            return
        if not self.lost:
            log.warning("Run %s: the event log is not taking events; the oldest unwritten ones are given up "
                        "past RUN_EVENTS_UNLOGGED_BYTES (%d bytes)", self.run_id, limit)
        self._lost_seq = self.unlogged[drop - 1][0]
        self.lost += drop
        del self.unlogged[:drop]

    def log_failed(self) -> None:
        """A write of the event log failed: from now until one succeeds, unwritten events are bounded."""
        self.log_down = True
        self._bound_unlogged()
        self._trim()

    def mark_logged(self, upto: int) -> None:
        """The events up to `upto` are in the event log: they may be dropped from memory now."""
        self.log_down = False
        done = 0
        while done < len(self.unlogged) and self.unlogged[done][0] <= upto:
            self._unlogged_bytes -= len(self.unlogged[done][1])
            done += 1
        del self.unlogged[:done]
        self.logged_seq = max(self.logged_seq, upto)
        self._trim()

    def _trim(self) -> None:
        limit = settings.RUN_EVENTS_BUFFER_BYTES
        droppable = max(self.logged_seq, self._lost_seq) if self.logged else self.last_seq
        drop = 0
        while self._bytes > limit and self.first_seq + drop <= droppable and drop < len(self._frames) - 1:
            self._bytes -= len(self._frames[drop])
            drop += 1
        if drop:
            del self._frames[:drop]
            self.first_seq += drop

    # --- reading ---------------------------------------------------------------------------------

    def take(self, cursor: int) -> tuple[bytes, int, str]:
        """(the frames after id `cursor`, joined, TAKE_BYTES at most unless one frame is larger; the
        new cursor; MORE, DONE or LAGGED)."""
        self.seal()
        if cursor < self.first_seq - 1:
            return b"", cursor, LAGGED
        start = end = max(cursor - self.first_seq + 1, 0)
        size = 0
        while end < len(self._frames) and (end == start or size + len(self._frames[end]) <= TAKE_BYTES):
            size += len(self._frames[end])
            end += 1
        frames = self._frames[start:end]
        cursor = max(cursor, self.first_seq - 1) + len(frames)
        done = (self.final_seq is not None and cursor >= self.final_seq) or (self.ended and cursor >= self.last_seq)
        return b"".join(frames), cursor, DONE if done else MORE

    def covers(self, cursor: int) -> bool:
        """Whether a reader at `cursor` can read on from memory (nothing it lacks was dropped)."""
        return cursor >= self.first_seq - 1

    async def changed(self) -> None:
        self._waiting += 1
        try:
            await self._wake.wait()
        finally:
            self._waiting -= 1

    def _changed(self) -> None:
        # Per appended event: a new Event only when a reader waits on the current one (a reader
        # takes, then waits, with no await between, so none can miss a change).
        if self._waiting:
            wake, self._wake = self._wake, asyncio.Event()
            wake.set()


# An SSE comment: every client ignores it, and it keeps a proxy in front (nginx cuts a stream after
# 60 s without a byte) from taking a run that waits on the model or a tool for a dead connection.
KEEP_ALIVE = b": keep-alive\n\n"


async def changed_within(feed: Feed, seconds: float) -> bool:
    """Waits for `feed` to change, at most `seconds`; False when it did not (time for KEEP_ALIVE)."""
    try:
        async with asyncio.timeout(seconds):
            await feed.changed()
    except TimeoutError:
        return False
    return True


async def read(feed: Feed, cursor: int) -> AsyncIterator[bytes]:
    """The frames of `feed` after id `cursor` as they come, until the run's last event; a reader that
    falls behind what the feed keeps gets the `tambo.stream.lagged` event and stops. KEEP_ALIVE goes
    out after every HEARTBEAT_SECONDS without an event (this is where every stream of a run waits)."""
    while True:
        chunk, cursor, state = feed.take(cursor)
        if chunk:
            # Everything ready goes out in one write; when nothing is, the next event goes at once.
            yield chunk
        if state == DONE:
            return
        if state == LAGGED:
            yield lagged_frame(cursor)
            return
        if not chunk:
            # Only when nothing was there: a yield may have waited on the client while the run went on.
            if not await changed_within(feed, settings.HEARTBEAT_SECONDS):
                yield KEEP_ALIVE


class Flusher:
    """The feeds of the runs this process streams, and the task writing their new events to the log."""

    def __init__(self) -> None:
        self.feeds: dict[str, Feed] = {}
        # The runs whose feeds appended or ended since the last flush: a flush looks at those alone.
        # Looking at every feed cost a serving process 11 % of its CPU with 1,000 streams at a word a
        # second each (py-spy; 20 flushes a second, each walking all 1,000 feeds for the ~50 with news).
        self._news: set[str] = set()
        self._dirty: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._last = 0.0
        # Told the thread of each run that starts here (runs/stream/thread_watch.py), at once.
        self.thread_listeners: list[Callable[[list[str]], None]] = []

    def feed_for(self, run_id: str, thread_id: str | None = None, after: int = 0, *, encrypt: bool = False) -> Feed:
        """A new logged feed for a run that starts streaming in this process (of thread `thread_id`;
        numbered after `after`: a run taken over from another process goes on after the events that
        process logged)."""
        feed = Feed(run_id, logged=True, after=after, on_append=functools.partial(self._mark_dirty, run_id),
                    thread_id=thread_id)
        feed.encrypt = encrypt
        self.feeds[run_id] = feed
        if not process_runtime.running():  # else the runtime started the writer (core/runtime.py)
            self.ensure_started()
        if thread_id is not None:
            for listener in self.thread_listeners:
                listener([thread_id])
        return feed

    def _mark_dirty(self, run_id: str) -> None:
        self._news.add(run_id)
        if self._dirty is not None:
            self._dirty.set()

    def ensure_started(self) -> None:
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done() or self._task.get_loop() is not loop:
            self._dirty = asyncio.Event()
            self._dirty.set()
            # A fresh context, as the watcher's: this task serves the whole process.
            self._task = loop.create_task(self._loop(), context=contextvars.Context())

    async def stop(self) -> None:
        """Writes what the feeds have not logged yet and stops the task (at the process's shutdown): a
        client resuming a run on another process then finds all its events in the log."""
        task, self._task = self._task, None
        if task is None or task.done():
            return
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        try:
            await self.flush()
        except Exception as exc:  # noqa: BLE001 - the process is ending; readers see the run as orphaned
            log_db_failure("Run events: the last write of the event log failed", exc)
        finally:
            await event_log_connection.close()

    def interval(self) -> float:
        # Readers in other processes wait on these writes; on SQLite there are none (one process),
        # and the log only serves replays, so the watcher's pace is enough.
        if connection.vendor == "postgresql":
            return settings.RUN_EVENTS_FLUSH_INTERVAL
        return max(settings.RUN_EVENTS_FLUSH_INTERVAL, settings.RUN_WATCH_INTERVAL)

    async def _loop(self) -> None:
        try:
            await self._run()
        finally:
            await event_log_connection.close()

    async def _run(self) -> None:
        while True:
            await self._dirty.wait()
            # The first events after a quiet spell go at once; then at most one write per interval.
            delay = self._last + self.interval() - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            self._dirty.clear()
            self._last = time.monotonic()
            try:
                await self.flush()
            except Exception as exc:  # noqa: BLE001 - the events stay in memory; the next round retries

                log_db_failure("Run events: writing the event log failed", exc)
                await asyncio.sleep(settings.RUN_WATCH_INTERVAL)
                self._dirty.set()

    async def flush(self) -> None:
        """Writes the new events of every feed in one statement, then lets the feeds drop them."""

        batch: dict[str, int] = {}
        rows: list[tuple[str, int, str, bool]] = []
        threads: list[str] = []
        # Taken before the first await: a feed that appends while this write is out is news for the next.
        news, self._news = self._news, set()
        for run_id in news:
            feed = self.feeds.get(run_id)
            if feed is None:
                continue
            feed.seal()
            if feed.unlogged:
                # Encrypted per flush, not per token: each event of the batch one Fernet token.
                try:
                    sealed = [(run_id, seq, seal_text(data, feed.encrypt), final) for seq, data, final in feed.unlogged]
                except ImproperlyConfigured as exc:
                    # No key to encrypt this run's events (SECRETS_KEYS unset): they stay out of the log
                    # rather than go in clear, and must not hold up every other run's events, which a
                    # retry of the whole batch on every flush did.
                    log.error("Run events of %s are not logged: %s", run_id, exc)
                    feed.mark_logged(feed.unlogged[-1][0])
                    if feed.ended:
                        self._forget(run_id)
                    continue
                rows.extend(sealed)
                batch[run_id] = feed.unlogged[-1][0]
                if feed.thread_id is not None:
                    threads.append(feed.thread_id)
            elif feed.ended:
                self._forget(run_id)  # all written: readers that hold it read on from memory
        try:
            if rows and connection.vendor == "postgresql":
                await event_log_connection.write(rows, also=threads)
            elif rows:
                await db_call(event_log_write, rows)
        except Exception:
            for run_id in batch:
                feed = self.feeds.get(run_id)
                if feed is not None:
                    feed.log_failed()
            self._news |= batch.keys()  # still unwritten: the next round writes them
            raise
        for run_id, upto in batch.items():
            feed = self.feeds.get(run_id)
            if feed is not None:
                feed.mark_logged(upto)
                if feed.ended and not feed.unlogged:
                    self._forget(run_id)

    def _forget(self, run_id: str) -> None:
        feed = self.feeds.pop(run_id, None)
        if feed is not None and feed.lost:
            log.warning("Run %s: %d events never reached the event log (it took none while memory allowed)",
                        run_id, feed.lost)


flusher = Flusher()
# A finished burst's events stay in memory until they are logged: the process is not quiet before.
memory.busy_register(lambda: bool(flusher.feeds))
