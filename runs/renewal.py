"""The lease renewal's own lane: one thread with a database connection of its own (docs/operations.md#takeover).

The watcher (runs/control.py) renewed the leases of all the runs a process streams as the first
statement of its tick, through `db_call`: on the `DB_THREADS` shared threads and the pool, first in,
first out, behind every request's database work. Two hosts of two processes saturated by 200 run
starts a second queued their renewals behind hundreds of starts for more than a third of
`RUN_LEASE_SECONDS`, and the other processes took 268 of their live runs over or failed them
(RUN_LEASE_EXPIRED). Overload must slow runs down, never end them nor hand them to another process.

So the renewal runs here, and nothing else does: `lock_renew` (one UPDATE, fenced by `owner` as ever)
every `renew_interval()` (RUN_WATCH_INTERVAL, or a twelfth of a lease when longer) on this thread's own connection, never a pooled one (PostgreSQL with the pool
on: one connection beside the pool, counted in docs/deployment.md). The cancels, the checkpoints, the
sweep and the takeovers stay on the watcher's tick, on the shared threads.

Nor does it wait for the event loop's turn, which a loaded process delays too; but it renews only
while the loop turns. Each round it asks the loop for the runs the process holds (a callback through
`call_soon_threadsafe`, at most one waiting) and renews those the loop last gave, provided the loop
gave them less than `loop_stale()` (a third of a lease) ago. A loop that stopped turning (a call that
never returns, a deadlock) streams nothing: it no longer renews, its leases go stale as a dead
process's do, and another process takes its runs over a third of a lease later than after a crash. A
loop that is merely slow keeps them.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Callable

from django.conf import settings
from django.db import connections

from core.db import connection_own, log_db_failure
from runs.lock import lock_renew
from runs.starting import starting_runs

log = logging.getLogger(__name__)

# An interval of 0 (some tests set it) must not spin: at most this many rounds a second.
MIN_INTERVAL = 0.05
STOP_WAIT = 2.0  # seconds `stop` waits for a renewal in flight (SQLite's busy wait can be longer)


# Renewals a lease gets at most: the other processes allow a third of a lease without one
# (`loop_stale`), so one every twelfth leaves four to lose before a live run is taken for dead. More
# often only rewrites every held thread's row for nothing: at the default 30 s lease, renewing at
# every 0.5 s tick was PostgreSQL's largest cost at 2,000 streams (31 ms a renewal of 500 runs,
# docs/benchmarks.md#several-hosts).
RENEWALS_PER_LEASE = 12


def renew_interval() -> float:
    """Seconds between two renewals: RUN_WATCH_INTERVAL, or a twelfth of a lease when that is longer."""
    return max(settings.RUN_WATCH_INTERVAL, settings.RUN_LEASE_SECONDS / RENEWALS_PER_LEASE, MIN_INTERVAL)


def loop_stale() -> float:
    """Seconds after the loop's last turn from which its runs' leases are no longer renewed: a third
    of a lease, what the other processes allow a lease without renewal (runs/recovery/leases.py)."""
    return settings.RUN_LEASE_SECONDS / 3


class RenewalLane:
    """The renewal thread of one event loop, started and stopped by the watcher with its task.

    `held()` is called on the loop and returns the ids of the runs whose leases the process renews.
    Create it on its loop. The thread ends by itself when the loop stops or closes without stopping
    it (an in-process test's loop)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, held: Callable[[], list[str]]) -> None:
        self.loop = loop
        self._held_fn = held
        self._held: tuple[float, list[str]] = (time.monotonic(), held())  # (the loop's turn, its runs)
        self._asked = False  # a callback for the runs waits for the loop's turn
        self._stale_told = False
        self._stop = threading.Event()
        self.renewals = 0  # UPDATEs that succeeded
        self._thread = threading.Thread(target=self._run, name="tambo-lease-renewal", daemon=True)
        self._thread.start()

    def alive(self) -> bool:
        return self._thread.is_alive() and not self._stop.is_set()

    async def stop(self) -> None:
        """Ends the lane after its renewal in flight, if any (waited for at most STOP_WAIT seconds)."""
        self._stop.set()
        await asyncio.to_thread(self._thread.join, STOP_WAIT)

    def _run(self) -> None:
        connection_own()
        try:
            while not self._stop.wait(renew_interval()):
                if self.loop.is_closed() or not self.loop.is_running():
                    return
                self._ask()
                self._renew()
        finally:
            connections.close_all()

    def _ask(self) -> None:
        if self._asked:
            return  # the loop has not turned since the last request
        self._asked = True
        try:
            self.loop.call_soon_threadsafe(self._answer)
        except RuntimeError:  # the loop closed meanwhile: the next round ends the lane
            pass

    def _answer(self) -> None:
        """On the loop."""
        self._held = (time.monotonic(), self._held_fn())
        self._asked = False

    def _renew(self) -> None:
        turned_at, held = self._held
        # Runs whose start took the lock and whose stream has not registered yet (runs/starting.py).
        run_ids = list(dict.fromkeys([*held, *starting_runs(max_age=settings.RUN_LEASE_SECONDS)]))
        if not run_ids:
            return
        if time.monotonic() - turned_at > loop_stale():
            if not self._stale_told:
                self._stale_told = True
                log.warning("The event loop has not turned for %.1f s: the leases of its %d run(s) are no longer "
                            "renewed", time.monotonic() - turned_at, len(run_ids))
            return
        self._stale_told = False
        try:
            lock_renew(run_ids=run_ids)
            self.renewals += 1
        except Exception as exc:  # noqa: BLE001 - logged; the next round tries again
            log_db_failure("Lease renewal failed", exc)
            connections.close_all()  # a connection an outage broke is not used again: the next round reconnects
