"""Runs whose start took the lock but whose stream has not yet registered with the watcher.

A run start takes the lock (and a fresh lease) on a database worker thread; the run's stream registers
with this process's watcher (runs/control.py) only once the start returned to the event loop. Until then
nothing renews the lease. A start that stalls there for a third of RUN_LEASE_SECONDS (a busy loop, a slow
return from the worker pool) made the lease look stale, and a watcher (another process's, or this one's)
took the run over while its starter went on with it too: two calls to the model for one run
(tests/runs/test_takeover_start.py). So the lock notes every run it gives a lease to here, and the
watcher's renewal (runs/renewal.py) renews these leases with its own until the run registers (or a
lease's time passed: a start that never registered, because its transaction rolled back or its stream
failed before it began, whose lease then simply runs out). Written from worker threads, read on the
loop and by the renewal's thread: a plain lock guards it.
"""
from __future__ import annotations

import threading
import time

_guard = threading.Lock()
_starting: dict[str, float] = {}  # run id → time.monotonic() when its start took the lock


def starting_note(run_id: str) -> None:
    """Called by the lock as it gives `run_id` a lease (runs/lock.py)."""
    with _guard:
        _starting[run_id] = time.monotonic()


def starting_done(run_id: str) -> None:
    """The run registered with the watcher (or will never stream here)."""
    with _guard:
        _starting.pop(run_id, None)


def starting_runs(*, max_age: float) -> list[str]:
    """The runs still starting; those noted more than `max_age` seconds ago are forgotten."""
    oldest = time.monotonic() - max_age
    with _guard:
        for run_id in [rid for rid, at in _starting.items() if at < oldest]:
            del _starting[run_id]
        return list(_starting)


def starting_clear() -> None:
    """Forgets every run (tests: runs noted by one test's direct lock calls are not the next one's)."""
    with _guard:
        _starting.clear()
