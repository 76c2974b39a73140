"""Deleting threads in bounded batches: the one way the retention job and the forgetting of a user
remove whole conversations (docs/operations.md#retention-and-deletion).

Each batch is its own short transaction over at most `batch` threads. Its rows are locked with
`SKIP LOCKED` on PostgreSQL, so a thread that a run is taking at that moment is left to a later batch
instead of waited for; a thread whose run is live (its lease not expired) is never chosen. The run
event log has no foreign key to its run (runs/models.py), so its rows go first, in the same
transaction.
"""
from __future__ import annotations

from collections import Counter

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from runs.models import Run, RunEvent
from threads.models import Message, RunStatus, Suggestion, Thread

BATCH = 200


def idle(threads: QuerySet[Thread]) -> QuerySet[Thread]:
    """The threads no live run holds: idle, or held by a run whose lease expired (its process is gone)."""
    return threads.filter(Q(run_status=RunStatus.IDLE) | Q(lease_expires_at__lt=timezone.now()))


def threads_delete_batch(threads: QuerySet[Thread], *, batch: int = BATCH) -> Counter:
    """Deletes at most `batch` of `threads` that no live run holds, with their messages, suggestions,
    runs and run events; returns the rows deleted by model label (empty: nothing was left to delete).
    One transaction; row locks on the chosen threads only, skipped where another transaction holds them.

    Each table is emptied of the batch's rows by one DELETE, children first: Django's cascade would
    load every message (its content, files and all) into memory to delete it."""
    with transaction.atomic():
        ids = list(idle(threads).order_by("pk").select_for_update(skip_locked=True, of=("self",))
                   .values_list("pk", flat=True)[:batch])
        if not ids:
            return Counter()
        runs = Run.objects.filter(thread_id__in=ids)
        messages = Message.objects.filter(thread_id__in=ids)
        # A row of another thread pointing into the batch (SET_NULL in the models) lets go first.
        Message.objects.filter(parent_message__in=messages.values("pk")).exclude(thread_id__in=ids) \
            .update(parent_message=None)
        Run.objects.filter(previous_run__in=runs.values("pk")).exclude(thread_id__in=ids).update(previous_run=None)
        counts = Counter()
        for rows in (RunEvent.objects.filter(run_id__in=runs.values("id")),
                     Suggestion.objects.filter(message__thread_id__in=ids), messages, runs,
                     Thread.objects.filter(pk__in=ids)):
            counts[rows.model._meta.label] = rows._raw_delete(rows.db)
        return +counts


def threads_delete(threads: QuerySet[Thread], *, batch: int = BATCH, max_batches: int | None = None) -> Counter:
    """`threads_delete_batch` until nothing is left (or `max_batches` ran); the rows deleted by model."""
    total: Counter = Counter()
    done = 0
    while max_batches is None or done < max_batches:
        counts = threads_delete_batch(threads, batch=batch)
        done += 1
        total.update(counts)
        if counts.get(Thread._meta.label, 0) < batch:
            break
    return total
