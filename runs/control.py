"""Cancelling a run that streams in this process, and the per-process watcher.

`RunControl` lets anything (a DELETE in this process, the watcher that saw a cancel flagged by
another process, the client disconnecting) stop a run at once: the model stream or tool call in
flight is a task that gets cancelled, so the provider's HTTP request is closed immediately rather
than at its next chunk.

The watcher is one task per process, started with the process (its runtime: tambo_project/runtime.py;
where no runtime runs on the loop, by the first API request or run: core/runtime.py). Every
RUN_WATCH_INTERVAL seconds it looks for cancels requested through the database with one SELECT,
checkpoints the in-progress text of the runs whose text changed (at most once a second per run) with one UPDATE, and records the
threads whose lease expired anywhere with one statement (docs/protocol.md#design-for-scale and #after-a-crash: batched, never
one query per run), and now and then removes the event-log rows of runs whose replay window closed
(runs/stream/event_log.py). It also starts the task that writes the runs' events to the event log on its
own, faster pace (runs/stream/feeds.py), and asks for a poll of the runs followed from other processes
(runs/stream/follow.py) in case a notification was lost. A tick that fails (the database is away) is
logged and the next one tries again.

The leases of the runs this process streams are renewed beside it, with one UPDATE every
RUN_WATCH_INTERVAL on a thread and a connection of their own that the watcher starts and stops with
its task (runs/renewal.py): on the shared database threads they waited behind every request's work,
and a process saturated by run starts lost its runs to the others.
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from typing import AsyncIterator, Awaitable, TypeVar

from django.conf import settings
from django.db import close_old_connections, connections

from core.db import db_call, log_db_failure
from core.runtime import process_runtime
from projects.limits import counters_prune
from runs.lock import lock_held_by
from runs.recovery.leases import checkpoint_write, expired_lease_sweep
from runs.recovery.takeover import runs_hand_over, takeover_claim, takeover_start
from runs.renewal import RenewalLane
from runs.starting import starting_done, starting_runs
from runs.statements import cancels_flagged
from runs.stream.event_log import event_log_cleanup
from runs.stream.feeds import flusher
from runs.stream.follow import follower
from runs.stream.thread_watch import thread_watch
from threads.sealing import seal_text

log = logging.getLogger(__name__)
T = TypeVar("T")

_DONE = object()
_CANCELLED = object()
_YIELD_EVERY = 16
CHECKPOINT_INTERVAL = 1.0  # seconds: the in-progress text of a run is checkpointed at most this often
SWEEP_EVERY = 1.0  # seconds at most between two looks for runs to take over and expired leases
# The cancel reason of the runs a shutting-down process ends: they fail retryably instead of cancelling.
SHUTDOWN_REASON = "shutdown"
# ... or hand them over to another process, which goes on with them (docs/operations.md#takeover).
HANDOVER_REASON = "handover"
CANCEL_POLL = 0.05  # seconds between the reads of a cancelled run's lock while its DELETE waits for its end


class RunCancelled(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class RunControl:
    """One streaming run's state in this process, which moves one way:

    holding the lock → (cancelling, once `cancel` gave a reason) → settled, once the run let the lock
    go (`settle`: completed, paused, cancelled or failed). A settled run cannot be cancelled, and the
    watcher no longer renews its lease or checkpoints its text.
    """

    def __init__(self, run_id: str):
        self.run_id = run_id
        self.cancel_reason: str | None = None
        self.outcome: str | None = None  # how the run let the lock go; None while it holds it
        self._task: asyncio.Task | None = None
        self._queue: asyncio.Queue | None = None
        # The model step in progress (runs/step.py), set by the loop; the watcher checkpoints its text.
        self.step = None
        self.sealed = False  # the thread's content is stored encrypted (threads/sealing.py): so is its checkpoint
        self.checkpointed: tuple[str, int] | None = None  # (message id, text length) last written
        self.checkpointed_at = 0.0
        # Set once the run's task is over: everything it stores (the partial message, its end) stored.
        self.ended = asyncio.Event()
        self.can_hand_over = False  # set by the loop: another process may go on with the run

    def checkpoint_due(self, now: float) -> tuple[str, str] | None:
        """(message id, text) when the step's text changed and the last checkpoint is old enough."""
        step = self.step
        if step is None or self.settled or now - self.checkpointed_at < CHECKPOINT_INTERVAL:
            return None
        text = step.text
        if not text or self.checkpointed == (step.message_id, len(text)):
            return None
        return step.message_id, text

    def checkpoint_written(self, message_id: str, text: str, now: float) -> None:
        self.checkpointed, self.checkpointed_at = (message_id, len(text)), now

    @property
    def settled(self) -> bool:
        return self.outcome is not None

    def settle(self, outcome: str) -> None:
        """The run no longer holds the lock. The first outcome stays: the loop's last resort after a
        failure past the release (runs/loop.py `advance`) may settle a run a second time."""
        if self.outcome is None:
            self.outcome = outcome

    @property
    def cancelled(self) -> bool:
        return self.cancel_reason is not None

    def cancel(self, reason: str) -> bool:
        if self.settled or self.cancelled:
            return False
        self.cancel_reason = reason
        if self._task is not None and not self._task.done():
            self._task.cancel()
        if self._queue is not None:
            # Wakes the reader even if the pump had not started yet.
            self._queue.put_nowait(_CANCELLED)
        return True

    def check(self) -> None:
        if self.cancel_reason is not None:
            raise RunCancelled(self.cancel_reason)

    async def call(self, awaitable: Awaitable[T]) -> T:
        """Awaits `awaitable` as a task that `cancel()` stops at once; raises RunCancelled then."""
        self.check()
        self._task = asyncio.ensure_future(awaitable)
        try:
            return await self._task
        except asyncio.CancelledError:
            if self.cancelled:
                raise RunCancelled(self.cancel_reason) from None
            raise
        finally:
            self._task = None

    async def stream(self, source: AsyncIterator[T]) -> AsyncIterator[T]:
        """Iterates `source` in a pump task that `cancel()` stops at once (closing `source`)."""
        queue: asyncio.Queue = asyncio.Queue()

        async def pump() -> None:
            try:
                async for item in source:
                    queue.put_nowait(item)
                    # A source that never waits (a cached or local model) would otherwise hold the
                    # event loop until it ends, and nothing would reach the socket before that.
                    # Yielding every few items lets what is ready go out together in one write.
                    if queue.qsize() >= _YIELD_EVERY:
                        await asyncio.sleep(0)
                queue.put_nowait(_DONE)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # handed to the reader, which re-raises it
                queue.put_nowait(exc)
            finally:
                aclose = getattr(source, "aclose", None)
                if aclose is not None:
                    await aclose()

        self.check()
        self._queue = queue
        self._task = asyncio.ensure_future(pump())
        try:
            while True:
                item = await queue.get()
                if item is _DONE:
                    return
                if item is _CANCELLED:
                    raise RunCancelled(self.cancel_reason or "cancelled")
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            if not self._task.done():
                self._task.cancel()
                try:
                    await self._task
                except BaseException:  # noqa: BLE001 - it is being torn down
                    pass
            self._task = None
            self._queue = None


class Watcher:
    """The process-wide registry of streaming runs with its renew, poll, checkpoint and sweep loop."""

    def __init__(self) -> None:
        self.controls: dict[str, RunControl] = {}
        self.draining = False
        self.handovers: set[asyncio.Task] = set()
        # Runs claimed whose takeover is starting: their leases are renewed as the streaming runs' are.
        self.claiming: dict[str, asyncio.Task] = {}
        self._task: asyncio.Task | None = None
        self._lane: RenewalLane | None = None  # the leases' renewal (runs/renewal.py), on the task's loop
        self._cleaned_at = 0.0
        self._swept_at = float("-inf")  # the first tick sweeps
        self._sweep_next = False  # the last sweep took runs over: there may be more

    def register(self, control: RunControl) -> None:
        """Adds a run; starts the watcher task on the running loop unless the process runtime runs
        there (it started the watcher) or the watcher does already."""
        self.controls[control.run_id] = control
        starting_done(control.run_id)
        if not process_runtime.running():
            self.ensure_started()

    def start(self) -> None:
        """Starts the watcher with the process (its runtime, core/runtime.py); a watcher drained by an
        earlier stop takes runs over again."""
        self.draining = False
        self.ensure_started()

    def ensure_started(self) -> None:
        """Starts the watcher on the running loop unless it runs there already. Cheap: call it often."""
        loop = asyncio.get_running_loop()
        # A task left behind by a loop that closed without cancelling it is never done, yet never runs.
        if self._task is None or self._task.done() or self._task.get_loop() is not loop:
            # A fresh context: the watcher serves the whole process and must not inherit the context
            # (and with it the sync thread) of the request that happened to start it.
            self._task = loop.create_task(self._loop(), context=contextvars.Context())
        self._lane_ensure(loop)
        flusher.ensure_started()

    def _lane_ensure(self, loop: asyncio.AbstractEventLoop) -> None:
        """Starts the renewal lane for `loop` unless it runs: a lane whose loop closed ended by itself."""
        if self._lane is None or not self._lane.alive() or self._lane.loop is not loop:
            self._lane = RenewalLane(loop, self.held_runs)

    def held_runs(self) -> list[str]:
        """The runs whose leases this process renews, as far as the loop knows: those it streams and
        has not settled, and those it claimed and is taking over. On the loop."""
        run_ids = [rid for rid, control in self.controls.items() if not control.settled]
        return run_ids + [rid for rid in self.claiming if rid not in self.controls]

    def unregister(self, control: RunControl) -> None:
        # Only this control: the same run taken over again by this process has a control of its own.
        if self.controls.get(control.run_id) is control:
            del self.controls[control.run_id]

    def cancel_local(self, run_id: str, reason: str) -> bool:
        control = self.controls.get(run_id)
        return control.cancel(reason) if control is not None else False

    async def end_wait(self, *, thread_id: str, run_id: str, timeout: float) -> bool:
        """After a cancel: waits until run `run_id` let the thread's lock go, its end and partial
        message stored; True then, False when `timeout` seconds passed first.

        A run streamed here is awaited through its control (no statement while it ends); whether it
        or a run streamed by another process (whose watcher sees the flag within a tick) let the
        lock go is then read from the database, one short statement every CANCEL_POLL seconds.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        control = self.controls.get(run_id)
        if control is not None:
            try:
                await asyncio.wait_for(control.ended.wait(), timeout)
            except asyncio.TimeoutError:
                return False
        while await db_call(lock_held_by, thread_id=thread_id, run_id=run_id):
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(CANCEL_POLL)
        return True

    def drain(self) -> int:
        """Stops every run this process streams as the process shuts down; returns how many were told.

        A run another process may go on with is handed over (docs/operations.md#takeover): once it
        stopped and its events are in the log, its lease is given up (`_hand_over`), and this process
        takes no run over from then on. Any other run ends with a retryable RUN_ERROR (runs/loop.py).
        The watcher's lane keeps renewing their leases meanwhile."""
        self.draining = True
        told = [control for control in list(self.controls.values())
                if control.cancel(HANDOVER_REASON if control.can_hand_over else SHUTDOWN_REASON)]
        handed = [control for control in told if control.cancel_reason == HANDOVER_REASON]
        if handed:
            task = asyncio.get_running_loop().create_task(self._hand_over(handed), context=contextvars.Context())
            self.handovers.add(task)
            task.add_done_callback(self.handovers.discard)
        return len(told)

    async def _hand_over(self, controls: list[RunControl]) -> None:
        await asyncio.wait([asyncio.ensure_future(c.ended.wait()) for c in controls],
                           timeout=settings.RUN_LEASE_SECONDS)
        handed = [c.run_id for c in controls if c.outcome == "handed over"]
        try:
            await flusher.flush()  # the new owner's events follow these in the log
            await db_call(runs_hand_over, run_ids=handed)
        except Exception as exc:  # noqa: BLE001 - their leases then run out: a takeover after the lease
            log_db_failure("Shutting down: handing runs over failed", exc)

    async def hand_over_wait(self) -> None:
        """Waits for the hand-overs `drain` started (at the process's shutdown, before the log's writer stops)."""
        if self.handovers:
            await asyncio.gather(*self.handovers, return_exceptions=True)

    async def _take_over(self, run_id: str) -> None:
        await takeover_start(run_id)

    def takeover_room(self) -> int:
        """How many more runs this process may take over now: RUN_TAKEOVERS_PER_PROCESS at once, less
        the takeovers still starting (their history being read); none once it is shutting down."""
        if self.draining:
            return 0
        return settings.RUN_TAKEOVERS_PER_PROCESS - len(self.claiming)

    async def stop(self) -> None:
        """Stops the watcher task, then the renewal lane (at the process's shutdown, once the runs
        have ended or been handed over)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        lane, self._lane = self._lane, None
        if lane is not None:
            await lane.stop()

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(settings.RUN_WATCH_INTERVAL)
            self._lane_ensure(asyncio.get_running_loop())  # a lane that died starts again
            try:
                await self.tick()
            except Exception as exc:  # noqa: BLE001 - a failed tick must not kill the watcher
                log_db_failure("Run watcher tick failed", exc)

    async def tick(self) -> None:
        """One round: poll for cancels, checkpoint, take runs over, sweep expired leases (one statement
        each); the leases are renewed on their own lane (runs/renewal.py)."""
        now = time.monotonic()
        run_ids = self.held_runs()
        # Runs whose start took the lock and whose stream has not registered yet (runs/starting.py).
        run_ids += [rid for rid in starting_runs(max_age=settings.RUN_LEASE_SECONDS) if rid not in self.controls]
        checkpoints = {}
        for rid in run_ids:
            due = self.controls[rid].checkpoint_due(now) if rid in self.controls else None
            if due is not None:
                checkpoints[rid] = due
        # The replay window closes on the event log's rows a few times per window, not every tick.
        cleanup = now - self._cleaned_at >= min(settings.RUN_REPLAY_SECONDS / 4, 30.0)
        if follower.mirrors:
            follower.wake()
        thread_watch.tick(now)  # a notification lost while LISTEN reconnected costs seconds at most
        # Runs to take over and expired leases are looked for at most once a second (a tenth of a
        # short lease), and at every tick while the last look found runs to take (a deploy's hand-over
        # of hundreds). Every tick, it was two queries (and on SQLite a new connection) two to five
        # times a second in every idle process: 5 % of a core each (docs/operations.md#takeover).
        sweep = self._sweep_next or now - self._swept_at >= min(settings.RUN_LEASE_SECONDS / 10, SWEEP_EVERY)
        if not (run_ids or cleanup or sweep):
            return  # nothing of this process's to poll, write or sweep: no database call
        if sweep:
            self._swept_at = now
        stored = {rid: (mid, seal_text(text, self.controls[rid].sealed)) for rid, (mid, text) in checkpoints.items()}
        flagged, written, claimed = await db_call(_tick_in_db, run_ids, stored, cleanup,
                                                  self.takeover_room() if sweep else 0, sweep)
        if sweep:
            self._sweep_next = bool(claimed)
        for run_id in claimed:
            # Each in its own task: reading a run's history must not hold up the next tick's renewals.
            task = asyncio.get_running_loop().create_task(self._take_over(run_id), context=contextvars.Context())
            self.claiming[run_id] = task
            task.add_done_callback(lambda _, run_id=run_id: self.claiming.pop(run_id, None))
        if cleanup:
            self._cleaned_at = now
        for rid, (message_id, text) in (checkpoints.items() if written else ()):
            control = self.controls.get(rid)
            if control is not None:
                control.checkpoint_written(message_id, text, now)
        for run_id in flagged:
            self.cancel_local(run_id, "cancelled")


def _cancels_poll(run_ids: list[str]) -> list[str]:
    try:
        return cancels_flagged(run_ids=run_ids)
    except Exception:
        # A connection that a database outage broke would fail every later call on this thread.
        close_old_connections()
        raise


def _tick_in_db(run_ids: list[str], checkpoints: dict[str, tuple[str, str]],
                cleanup: bool = False, room: int = 0, sweep: bool = True) -> tuple[list[str], bool, list[str]]:
    """The watcher's database work for one tick, on a database worker thread (`db_call`); returns the
    runs flagged for cancel, whether the checkpoints were written, and the runs taken over (at most
    `room`: runs/recovery/takeover.py), claimed before the sweep records the expired leases left
    (both only when `sweep`).

    Closes its connections at the end of every tick, so that an idle process holds none and a
    connection that an outage broke is never reused (with a connection pool that is a return to it).
    """
    try:
        flagged = _cancels_poll(run_ids) if run_ids else []
        # Each part stands alone: a checkpoint that fails must not stop the sweep, nor lose the cancels.
        written = True
        try:
            checkpoint_write(checkpoints=checkpoints)
        except Exception as exc:  # noqa: BLE001 - logged; the next tick tries again
            written = False
            log_db_failure("Run watcher: checkpoints failed", exc)
        claimed: list[str] = []
        if sweep:
            try:
                claimed = takeover_claim(limit=room, held=run_ids)
            except Exception as exc:  # noqa: BLE001 - logged; the next sweep claims again
                log_db_failure("Run watcher: taking runs over failed", exc)
            try:
                expired_lease_sweep()
            except Exception as exc:  # noqa: BLE001 - logged; the next sweep tries again
                log_db_failure("Run watcher: the expired-lease sweep failed", exc)
        if cleanup:
            try:
                event_log_cleanup()
            except Exception as exc:  # noqa: BLE001 - logged; a later tick cleans up
                log_db_failure("Run watcher: removing old run events failed", exc)
            try:
                counters_prune(older_than_days=settings.USAGE_RETENTION_DAYS)
            except Exception as exc:  # noqa: BLE001 - logged; a later tick prunes
                log_db_failure("Run watcher: pruning old limit counters failed", exc)
        return flagged, written, claimed
    finally:
        connections.close_all()


watcher = Watcher()
