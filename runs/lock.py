"""The per-thread run lock: a lease on the thread row (docs/protocol.md#the-run-lock).

`run_status` moves idle → waiting → streaming → idle. Taking and releasing are each one short
transaction holding the thread's row lock (`SELECT … FOR UPDATE` on PostgreSQL; on SQLite the
IMMEDIATE transaction mode set in settings takes the database write lock at BEGIN, which
serialises the same read-check-write). No transaction is ever held while a model or tool runs.

The lock carries an expiry that the streaming process renews (`lock_renew`, batched per process).
A holder that died stops renewing; the next taker then takes the lock over and records the dead
run as failed, so a thread is never locked forever. What recording it means (the run's row, its
checkpointed text, its event log) is crash recovery's (runs/recovery/leases.py), which registers it
here when Django starts (runs/apps.py): the lock only knows that a lease expired.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any, Callable

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from core.problems import BUSY_RETRY_AFTER, Problem
from runs.models import THIS_PROCESS, Run
from runs.starting import starting_note
from runs.statements import run_release
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
    runs with the thread's row lock held, before the new holder's `in_lock`."""
    global _takeover
    _takeover = record


def lock_take(*, thread_id: str, run_id: str, in_lock: Callable[[Thread], Any] | None = None,
              check: Callable[[Thread], Any] | None = None, queryset: QuerySet[Thread] | None = None,
              status: str = RunStatus.WAITING, read: Callable[[str], Thread] | None = None) -> Thread:
    """Takes the run lock of a thread for `run_id` (IDLE → `status`, WAITING unless the caller
    starts streaming at once) and returns the locked thread.

    Holds the thread's row lock for one short transaction, taken by threads.services `thread_lock`
    on `queryset` (default all threads; a caller narrows it to what the requester may see, and may
    annotate it to read more in the same statement), or by `read(thread_id)` when given (a statement
    written once that locks the row the same way: threads/statements.py). `check(thread)` runs first, on the locked row,
    for the checks that come before the lock's own (docs/protocol.md#starting-a-run). `in_lock(thread)` runs after
    the lock check, so the caller can write what must change atomically with the lock (the Run row,
    tool results, clearing pending ids); anything either raises rolls everything back. Raises
    Problem 404 THREAD_NOT_FOUND when no row matches, 409 CONCURRENT_RUN while a live run holds the
    lock; an expired lease is taken over and its run recorded as failed.
    """
    with transaction.atomic():
        thread = read(thread_id) if read is not None else thread_lock(thread_id=thread_id, queryset=queryset)
        if check is not None:
            check(thread)
        if thread.run_status != RunStatus.IDLE:
            if thread.has_live_run:
                raise Problem(409, "CONCURRENT_RUN", "Another run is active on this thread.",
                              currentRunId=thread.current_run_id, retryAfter=BUSY_RETRY_AFTER)
            if _takeover is None:
                # Never taken over silently: a dead run left unrecorded would stay "streaming" for good.
                raise RuntimeError("No lease takeover registered: the runs app is not ready (runs/apps.py).")
            _takeover(thread)
        if in_lock is not None:
            in_lock(thread)
        _hold(thread, run_id, status)
        # Every column, as thread.save() writes them, through a statement written once.
        THREAD_UPDATE.save(thread)
    return thread


def lock_take_created(*, thread: Thread, run_id: str, status: str = RunStatus.WAITING) -> None:
    """Takes the lock of a thread about to be inserted in the caller's open transaction (as
    threads.services `thread_create`'s `before_insert`): nobody else can see the row yet, so there is
    nothing to check and no row lock to wait for, and the INSERT writes the lock."""
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
    owned = Run.objects.filter(OWNED, id__in=run_ids).values("id")
    return Thread.objects.filter(current_run_id__in=owned).exclude(run_status=RunStatus.IDLE).update(
        lease_expires_at=_lease_deadline()
    )


def lock_release(*, thread_id: str, run_id: str, run_status: str, thread_fields: dict[str, Any] | None = None,
                 error_code: str | None = None, error_message: str | None = None,
                 run_fields: dict[str, Any] | None = None, in_lock: Callable[[], Any] | None = None,
                 before: Callable[[], Any] | None = None) -> bool:
    """Releases the lock held by `run_id` (→ IDLE) and records how the run ended.

    Holds the thread's row lock for one short transaction. Only the holder can release: for any
    other run this changes nothing and returns False (its lease was taken over, for instance).
    `thread_fields` are set on the thread in the same transaction (pending ids, last run …), and
    `run_fields` on the run (its token usage); `before()` runs first in the same transaction, whether
    or not the lock is still held (the run's last step, stored with its end: runs/services.py), and
    `in_lock()` last, only when the lock was released (the run's usage record: telemetry/runs.py).
    A run another process took over (runs/recovery/takeover.py) releases nothing and stores nothing.
    """
    now = timezone.now()
    # One conditional UPDATE is the check and the write: it takes the row lock and changes the row
    # only while `run_id` holds the lock; the run's is written with it (runs/statements.py: one
    # statement on PostgreSQL, two in this transaction on SQLite).
    with transaction.atomic():
        if before is not None:
            before()
        released = run_release(
            thread_id=thread_id, run_id=run_id,
            thread_values={"run_status": RunStatus.IDLE, "current_run_id": None, "lease_expires_at": None,
                           "updated_at": now, **(thread_fields or {})},
            run_values={"status": run_status, "error_code": error_code, "error_message": error_message,
                        "finished_at": now, **(run_fields or {})})
        if released and in_lock is not None:
            in_lock()
        if not released and before is not None and Run.objects.filter(id=run_id).exclude(OWNED).exists():
            # Taken over by another process, which redoes the step: what `before` stored must go.
            transaction.set_rollback(True)
    return released


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
