"""The per-thread run lock: a lease on the thread row (docs/protocol.md#the-run-lock).

`run_status` moves idle → waiting → streaming → idle. Taking and releasing each happen in one short
transaction holding the thread's row lock (`SELECT … FOR UPDATE` on PostgreSQL; on SQLite the
IMMEDIATE transaction mode set in settings takes the database write lock at BEGIN, which
serialises the same read-check-write): the caller's, which writes what goes with the lock in it
and reads top to bottom (`with lock_held(...) as thread:`, then `lock_release`), no callbacks. Each
lock operation is one statement (the row read with its lock, its one UPDATE, the conditional
release). No transaction is ever held while a model or tool runs.

The lock carries an expiry that the streaming process renews (`lock_renew`, batched per process, on
a thread and a connection of its own: runs/renewal.py).
A holder that died stops renewing; the next taker then takes the lock over and records the dead
run as failed, so a thread is never locked forever. What recording it means (the run's row, its
checkpointed text, its event log) is crash recovery's (runs/recovery/leases.py), which registers it
here when Django starts (runs/apps.py): the lock only knows that a lease expired.
"""
from __future__ import annotations

from datetime import timedelta
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from core.problems import BUSY_RETRY_AFTER, Problem
from runs.models import THIS_PROCESS, Run
from runs.starting import starting_done, starting_note
from runs.statements import leases_renew, run_release
from threads.models import LEASE_EXPIRED_CODE, RunStatus, Thread  # noqa: F401 - LEASE_EXPIRED_CODE for callers
from threads.services import thread_lock
from threads.statements import THREAD_UPDATE


def _lease_deadline():
    return timezone.now() + timedelta(seconds=settings.RUN_LEASE_SECONDS)


FINAL_RUN_STATUSES = (Run.Status.COMPLETED, Run.Status.CANCELLED, Run.Status.FAILED)
# The runs this process may write for: those nobody took over (their starter's) and those it took over.
OWNED = Q(owner__isnull=True) | Q(owner=THIS_PROCESS)


class LeaseLost(Exception):
    """Another process took the run over (docs/operations.md#takeover): this one may write nothing for it."""


def lock_fence(*, run_id: str) -> None:
    """Raises LeaseLost unless this process may write for `run_id`. One UPDATE that changes nothing
    but takes the run's row lock, so in the caller's transaction a takeover (which updates the row)
    either committed before (and this raises) or waits until the caller commits."""
    if not Run.objects.filter(OWNED, id=run_id).update(owner=F("owner")):
        raise LeaseLost(f"Run {run_id} was taken over by another process.")

_takeover: Callable[[Thread], None] | None = None


def lock_takeover_register(record: Callable[[Thread], None]) -> None:
    """Sets what taking over an expired lease records about the run that held it: `record(thread)`
    runs with the thread's row lock held, before the new holder's `with lock_held(...)` block."""
    global _takeover
    _takeover = record


@contextmanager
def lock_held(*, run_id: str, thread_id: str | None = None, thread: Thread | None = None,
              queryset: QuerySet[Thread] | None = None, status: str = RunStatus.WAITING) -> Iterator[Thread]:
    """Holds the run lock of a thread for `run_id` (IDLE → `status`, WAITING unless the caller starts
    streaming at once) while the `with` block writes what must change atomically with it (the Run
    row, the turn, clearing pending ids): `with lock_held(thread_id=…, run_id=…) as thread:`.

    In the caller's transaction, or one of its own when none is open (never a savepoint). The row is
    read and locked by threads.services `thread_lock` on `queryset` (default all threads; a caller
    narrows it to what the requester may see), or is `thread`, the row the caller already read with
    its row lock in this transaction (a statement that reads more with it: threads/statements.py)
    and checked as the checks that come before the lock's own want (docs/protocol.md#starting-a-run).
    Raises Problem 404 THREAD_NOT_FOUND when no row matches, 409 CONCURRENT_RUN while a live run
    holds the lock; an expired lease is taken over and its run recorded as failed. When the block
    ends, the thread row (every column: the lock and what the block changed on it) is written in one
    UPDATE; when it raises, nothing is written and the transaction rolls back, lock included.
    """
    with transaction.atomic(savepoint=False):
        if thread is None:
            thread = thread_lock(thread_id=thread_id, queryset=queryset)
        if thread.run_status != RunStatus.IDLE:
            if thread.has_live_run:
                raise Problem(409, "CONCURRENT_RUN", "Another run is active on this thread.",
                              currentRunId=thread.current_run_id, retryAfter=BUSY_RETRY_AFTER)
            if _takeover is None:
                # Never taken over silently: a dead run left unrecorded would stay "streaming" for good.
                raise RuntimeError("No lease takeover registered: the runs app is not ready (runs/apps.py).")
            _takeover(thread)
        _hold(thread, run_id, status)
        try:
            yield thread
        except BaseException:
            starting_done(run_id)  # rolled back: no lease for the watcher to renew
            raise
        # Every column, as thread.save() writes them, through a statement written once.
        THREAD_UPDATE.save(thread)


def lock_hold_new(*, thread: Thread, run_id: str, status: str = RunStatus.WAITING) -> None:
    """Holds the lock of a thread about to be inserted in the caller's open transaction (as
    threads.services `thread_create`'s `before_insert`): nobody else can see the row yet, so there is
    nothing to check and no row lock to wait for, and the INSERT writes the lock (no statement of its
    own). A rollback of that transaction takes the row and the lock with it."""
    _hold(thread, run_id, status)


def _hold(thread: Thread, run_id: str, status: str) -> None:
    thread.run_status = status
    thread.current_run_id = run_id
    thread.lease_expires_at = _lease_deadline()
    thread.status_message = None
    thread.updated_at = timezone.now()
    # Renewed by the watcher from now on, not only once the run's stream registers (runs/starting.py).
    starting_note(run_id)


def lock_mark_streaming(*, thread_id: str, run_id: str) -> bool:
    """WAITING → STREAMING for the holder; False (and no change) for anyone else."""
    now = timezone.now()
    changed = Thread.objects.filter(pk=thread_id, current_run_id=run_id).update(
        run_status=RunStatus.STREAMING, lease_expires_at=_lease_deadline(), updated_at=now
    )
    if changed:
        Run.objects.filter(id=run_id).update(status=Run.Status.STREAMING, started_at=now)
    return bool(changed)


def lock_renew(*, run_ids: list[str]) -> int:
    """Extends the leases of all the given runs in one query; returns how many are still held."""
    if not run_ids:
        return 0
    # Only leases this process still holds: one it lost to a takeover must run out for its new owner too.
    return leases_renew(run_ids=run_ids, until=_lease_deadline())


def lock_release(*, thread_id: str, run_id: str, run_status: str, thread_fields: dict[str, Any] | None = None,
                 error_code: str | None = None, error_message: str | None = None,
                 run_fields: dict[str, Any] | None = None) -> bool:
    """Releases the lock held by `run_id` (→ IDLE) and records how the run ended.

    In the caller's transaction, or one of its own when none is open (never a savepoint): a caller
    that writes with the end (the run's last step before it, its usage row after it when it
    released: runs/services.py) opens the transaction and writes there. Only the holder can release:
    for any other run this changes nothing and returns False (its lease was taken over, for
    instance). `thread_fields` are set on the thread (pending ids, last run …) and `run_fields` on
    the run (its token usage). A run another process took over (runs/recovery/takeover.py) releases
    nothing (`lock_taken_over` tells the caller to roll back what it wrote before).
    """
    now = timezone.now()
    # One conditional UPDATE is the check and the write: it takes the row lock and changes the row
    # only while `run_id` holds the lock; the run's is written with it (runs/statements.py: one
    # statement on PostgreSQL, two in this transaction on SQLite).
    with transaction.atomic(savepoint=False):
        return run_release(
            thread_id=thread_id, run_id=run_id,
            thread_values={"run_status": RunStatus.IDLE, "current_run_id": None, "lease_expires_at": None,
                           "updated_at": now, **(thread_fields or {})},
            run_values={"status": run_status, "error_code": error_code, "error_message": error_message,
                        "finished_at": now, **(run_fields or {})})


def lock_taken_over(*, run_id: str) -> bool:
    """Whether another process took `run_id` over (docs/operations.md#takeover): one statement, asked
    only after a release that released nothing."""
    return Run.objects.filter(id=run_id).exclude(OWNED).exists()


def lock_held_by(*, thread_id: str, run_id: str) -> bool:
    """Whether `run_id` still holds the thread's lock: False once its end is stored (one statement)."""
    return Thread.objects.filter(pk=thread_id, current_run_id=run_id).exclude(run_status=RunStatus.IDLE).exists()


def lock_request_cancel(*, thread_id: str, run_id: str) -> bool:
    """Flags the active run for cancellation; the process streaming it sees the flag (runs/control.py).

    A run whose lease expired is not active: False, and nothing is flagged or freed."""
    held = Thread.objects.filter(pk=thread_id, current_run_id=run_id, lease_expires_at__gt=timezone.now()).exclude(
        run_status=RunStatus.IDLE).exists()
    if not held:
        return False
    Run.objects.filter(id=run_id).update(cancel_requested=True)
    return True
