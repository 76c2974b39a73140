"""What survives a crash (docs/protocol.md#after-a-crash): partial-text checkpoints and the record of expired leases.

Both are written by each process's watcher (runs/control.py), batched per tick:

- `checkpoint_write` stores the in-progress assistant text of all the runs a process streams in one
  UPDATE (joined to the values: runs/statements.py), so a process that dies leaves behind what its clients had seen.
- `expired_lease_sweep` records every thread whose lease expired (its process died, or lost the database
  for longer than the lease) as idle with `lastRunError` RUN_LEASE_EXPIRED, fails the dead run and
  stores its checkpointed text as a cancelled assistant message. On PostgreSQL that is one statement
  (data-modifying CTEs) for all the threads; on SQLite, which has none, one IMMEDIATE transaction of a
  few statements, still a fixed number per tick whatever the number of threads. Either is preceded
  by one read that finds whether anything expired at all.
- Both ways of recording a dead run (the sweep, and `runs/lock.py` taking an expired lease over) end
  its logged events with a RUN_ERROR RUN_LEASE_EXPIRED (`event_log_dead_runs`, or the same rows in the
  sweep's statement on PostgreSQL), so readers following it from other processes and later replays
  end the way the run did (docs/protocol.md#resumable-runs) instead of stopping without a terminal event.

A checkpoint's message id is the id the client saw in TEXT_MESSAGE_START, the one the run itself
stores when the step ends; whoever stores a checkpoint skips it when a message with that id exists,
so a step stored normally is never stored twice.
"""
from __future__ import annotations

import json
from datetime import timedelta

from ag_ui.core import RunErrorEvent
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from runs.lock import FINAL_RUN_STATUSES, OWNED
from runs.models import Run, RunEvent
from runs.recovery.statements import expired_leases_free
from runs.statements import checkpoints_store
from runs.stream.sse import encode_event
from runs.stream.statements import NOTIFY_LIMIT, channel_notify
from threads import services as thread_services
from threads.models import LEASE_EXPIRED_CODE, LEASE_EXPIRED_ERROR, Message, RunStatus, Thread
from threads.sealing import is_sealed, open_text

DEAD_RUN_MESSAGE = "The server process running this run stopped responding."
SWEEP_BATCH = 500  # expired threads recorded per tick at most; the next tick takes the rest
_FINAL = ("completed", "cancelled", "failed")
# A run that can be taken over but that no process took (all full) is failed by the expiry sweep
# after this many leases: its client must not wait for ever.
UNCLAIMED_LEASES = 4


def takeable_runs():
    """The runs a takeover may go on with (a subquery of run ids)."""
    return Run.objects.filter(resume__isnull=False, takeover_count__lt=settings.RUN_TAKEOVER_LIMIT,
                              cancel_requested=False).values("id")


def stale_before(now):
    """A lease ending before this was not renewed for a third of RUN_LEASE_SECONDS: its holder renews
    it every RUN_WATCH_INTERVAL, so its process is gone or stuck, and a takeover need not wait for the
    rest of the lease. A holder that was only stuck is fenced off (runs/lock.py `lock_fence`)."""
    return now + timedelta(seconds=settings.RUN_LEASE_SECONDS * 2 / 3)


def unclaimed_since(now):
    """Leases older than this are failed by the sweep even when their run could be taken over."""
    return now - timedelta(seconds=settings.RUN_LEASE_SECONDS * UNCLAIMED_LEASES)


def checkpoint_write(*, checkpoints: dict[str, tuple[str, str]]) -> int:
    """Stores {run id: (message id, text so far)} for all the given runs in one UPDATE; returns rows changed.

    Holds no lock beyond the UPDATE's own row locks. Runs that ended meanwhile are updated too,
    harmlessly: only the run of an expired lease is ever read back.
    """
    if not checkpoints:
        return 0
    return checkpoints_store(checkpoints=checkpoints)


def dead_run_event() -> str:
    """The JSON of the final event logged for a run whose process died: a retryable RUN_ERROR."""
    event = RunErrorEvent(message=DEAD_RUN_MESSAGE, code=LEASE_EXPIRED_CODE, category="server_error",
                          isRetryable=True)
    return encode_event(event)[6:-2].decode()


def event_log_dead_runs(*, run_ids: list[str]) -> None:
    """Logs `dead_run_event` after the last logged event of each run that has no final event yet,
    and on PostgreSQL wakes their readers elsewhere; two statements (three with the notification)
    whatever the number of runs. The caller's transaction holds the runs' threads."""
    if not run_ids:
        return
    logged = {run_id: (last, finals) for run_id, last, finals in RunEvent.objects.filter(run_id__in=run_ids)
              .values("run_id").annotate(last=Max("seq"), finals=Count("seq", filter=Q(final=True)))
              .values_list("run_id", "last", "finals")}
    now, data = timezone.now(), dead_run_event()
    rows = [RunEvent(run_id=run_id, seq=logged.get(run_id, (0, 0))[0] + 1, data=data, final=True, created_at=now)
            for run_id in run_ids if not logged.get(run_id, (0, 0))[1]]
    RunEvent.objects.bulk_create(rows, ignore_conflicts=True)
    if rows and connection.vendor == "postgresql":
        ids = ",".join(row.run_id for row in rows)
        channel_notify(ids if len(ids) <= NOTIFY_LIMIT else "*")  # delivered when the caller's transaction commits


def dead_run_record(thread: Thread) -> None:
    """Records the run of an expired lease that a new run takes over as failed, and stores its
    checkpointed text as a cancelled assistant message (docs/operations.md). Registered with the lock
    (runs/apps.py); called with the thread's row lock held."""
    now = timezone.now()
    dead = Run.objects.filter(id=thread.current_run_id).exclude(status__in=FINAL_RUN_STATUSES).first()
    if dead is not None:
        Run.objects.filter(id=dead.id).update(status=Run.Status.FAILED, error_code=LEASE_EXPIRED_CODE,
                                              error_message=DEAD_RUN_MESSAGE, finished_at=now)
        partial_store(thread=thread, run=dead)
        event_log_dead_runs(run_ids=[dead.id])
    thread.last_run_error = dict(LEASE_EXPIRED_ERROR)
    thread.last_run_cancelled = None


def partial_store(*, thread: Thread, run: Run) -> Message | None:
    """Stores the run's checkpointed text as an assistant message with `isCancelled`, unless there
    is none or a message with its id exists already. Caller holds the thread's row lock."""
    if not run.partial_message_id or not run.partial_text:
        return None
    if Message.objects.filter(id=run.partial_message_id).exists():
        return None
    text = open_text(run.partial_text)
    return thread_services.message_create(thread=thread, role=Message.Role.ASSISTANT,
                                          content=[{"type": "text", "text": text}], run_id=run.id,
                                          is_cancelled=True, message_id=run.partial_message_id)


def expired_lease_sweep() -> int:
    """Records every expired lease as a failed run (see the module docstring); returns threads freed.

    Rows another transaction holds (a run taking the lease over, another process sweeping) are
    skipped on PostgreSQL and left to whoever holds them. A read of the lease index comes first, so
    a tick with nothing expired (nearly all of them) writes nothing and locks one table only: the
    writing statement locks three, and doing that every tick in every process would take SQLite's
    write lock for nothing and could deadlock against DDL or TRUNCATE on PostgreSQL.
    """
    if not _expired(timezone.now()).exists():
        return 0
    if connection.vendor == "postgresql":
        return _sweep_postgresql()
    return _sweep_portable()


def _expired(now):
    # A run that can be taken over is left to a takeover (runs/recovery/takeover.py), unless no process
    # took it for UNCLAIMED_LEASES leases.
    return Thread.objects.exclude(run_status=RunStatus.IDLE).filter(lease_expires_at__lt=now).exclude(
        current_run_id__in=takeable_runs(), lease_expires_at__gte=unclaimed_since(now))


def _sweep_postgresql() -> int:
    with transaction.atomic(savepoint=False):
        freed, sealed = expired_leases_free(
            now=timezone.now(), batch=SWEEP_BATCH, error=json.dumps(LEASE_EXPIRED_ERROR), code=LEASE_EXPIRED_CODE,
            message=DEAD_RUN_MESSAGE, final=list(_FINAL), dead_event=dead_run_event(),
            unclaimed=unclaimed_since(timezone.now()), takeover_limit=settings.RUN_TAKEOVER_LIMIT)
        if sealed:  # encrypted checkpoints (threads/sealing.py): SQL cannot build their message
            _partials_store(list(Run.objects.filter(id__in=sealed)))
    return freed


def _partials_store(runs: list[Run]) -> None:
    """The checkpointed text of each run as its cancelled assistant message, unless stored already."""
    saved = [r for r in runs if r.partial_message_id and r.partial_text]
    existing = set(Message.objects.filter(id__in=[r.partial_message_id for r in saved]).values_list("id", flat=True))
    messages = []
    for r in saved:
        if r.partial_message_id not in existing:
            message = Message(id=r.partial_message_id, thread_id=r.thread_id, run_id=r.id, role=Message.Role.ASSISTANT,
                              content=[{"type": "text", "text": open_text(r.partial_text)}], is_cancelled=True)
            # A checkpoint is encrypted when its thread's content is (runs/control.py): no read of the thread.
            message.thread_sealed_is(is_sealed(r.partial_text))
            messages.append(message)
    Message.objects.bulk_create(messages)


def _sweep_portable() -> int:
    now = timezone.now()
    with transaction.atomic():
        dead = dict(_expired(now).order_by("lease_expires_at").values_list("id", "current_run_id")[:SWEEP_BATCH])
        if not dead:
            return 0
        Thread.objects.filter(id__in=list(dead)).update(
            run_status=RunStatus.IDLE, current_run_id=None, lease_expires_at=None, status_message=None,
            last_run_cancelled=None, last_run_error=dict(LEASE_EXPIRED_ERROR), updated_at=now)
        runs = list(Run.objects.filter(id__in=[r for r in dead.values() if r]).exclude(status__in=_FINAL))
        Run.objects.filter(id__in=[r.id for r in runs]).update(
            status=Run.Status.FAILED, error_code=LEASE_EXPIRED_CODE, error_message=DEAD_RUN_MESSAGE, finished_at=now)
        _partials_store(runs)
        event_log_dead_runs(run_ids=[r.id for r in runs])
    return len(dead)
