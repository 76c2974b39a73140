"""The retention job: what each project's `retention` (projects/config.py, docs/projects.md) says is
too old, deleted in bounded batches (docs/operations.md#retention-and-deletion).

Every batch is one short statement or transaction over at most `batch` rows, found through an index
(threads by project and last activity, usage by project and time, events by run), and a pass does at
most `max_batches` batches of each kind per project: a year of backlog is worked off over several
passes instead of in one long transaction. Any process may run a pass at any time (the deletes are
idempotent and skip rows another transaction holds); `retention/jobs.py` runs one every
RETENTION_INTERVAL_SECONDS in each serving process, and `manage.py apply_retention` runs one on demand.
"""
from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any, Callable

from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from projects.config import project_settings
from projects.models import Project
from retention.batches import BATCH, threads_delete
from runs.models import Run, RunEvent
from telemetry.models import Usage
from threads.models import Message, Thread
from threads.sealing import seal_json

MAX_BATCHES = 20
# Messages whose files are stripped per transaction: each is read and written whole, files and all
# (up to MAX_RUN_BYTES each), so far fewer than the rows of the other batches.
UPLOAD_BATCH = 20
UPLOADS_STRIPPED = "retention.Upload"  # the report's label for files taken out of messages


def retention_apply(*, now: datetime | None = None, batch: int = BATCH, max_batches: int = MAX_BATCHES,
                    ) -> dict[str, Counter]:
    """One pass over every project with a retention; returns what was removed, by project name and
    model label (projects with nothing removed are left out)."""
    now = now or timezone.now()
    report: dict[str, Counter] = {}
    for project in Project.objects.exclude(settings={}).only("pk", "name", "settings", "settings_version"):
        rules = project_settings(project).retention
        if not rules.any:
            continue
        removed: Counter = Counter()
        if rules.transcripts_days:
            old = Thread.objects.filter(project=project, updated_at__lt=now - timedelta(days=rules.transcripts_days))
            removed.update(threads_delete(old, batch=batch, max_batches=max_batches))
        if rules.uploads_days:
            removed[UPLOADS_STRIPPED] += uploads_strip(project, now - timedelta(days=rules.uploads_days),
                                                       batch=min(batch, UPLOAD_BATCH), max_batches=max_batches)
        if rules.usage_days:
            removed[Usage._meta.label] += usage_prune(project, now - timedelta(days=rules.usage_days),
                                                      batch=batch, max_batches=max_batches)
        if rules.event_log_minutes:
            removed[RunEvent._meta.label] += event_log_prune(
                project, now - timedelta(minutes=rules.event_log_minutes), batch=batch, max_batches=max_batches)
        if +removed:
            report[project.name] = +removed
    return report


def usage_prune(project: Project, cutoff: datetime, *, batch: int, max_batches: int) -> int:
    """Deletes the project's usage rows older than `cutoff`, oldest first, `batch` rows a statement."""
    old = Usage.objects.filter(project=project, created_at__lt=cutoff).order_by("created_at")
    # Nothing refers to a usage row and no signal listens: a bare DELETE.
    return _in_batches(lambda n: list(old.values_list("id", flat=True)[:n]),
                       lambda ids: Usage.objects.filter(id__in=ids), batch=batch, max_batches=max_batches)


def event_log_prune(project: Project, cutoff: datetime, *, batch: int, max_batches: int) -> int:
    """Deletes the event-log rows of the project's runs that ended before `cutoff`, `batch` runs a statement."""
    ended = Run.objects.filter(thread__project=project, finished_at__lt=cutoff).values("id")
    logged = RunEvent.objects.filter(run_id__in=ended).values_list("run_id", flat=True).order_by("run_id").distinct()
    return _in_batches(lambda n: list(logged[:n]), lambda run_ids: RunEvent.objects.filter(run_id__in=run_ids),
                       batch=batch, max_batches=max_batches)


def _in_batches(next_keys: Callable[[int], list], rows_of: Callable[[list], QuerySet], *, batch: int,
                max_batches: int) -> int:
    """Deletes `rows_of(keys)` for the next `batch` keys, one statement a batch, until none is left or
    `max_batches` batches were deleted; returns the rows deleted."""
    deleted = 0
    for _ in range(max_batches):
        keys = next_keys(batch)
        if not keys:
            break
        rows = rows_of(keys)
        deleted += rows._raw_delete(rows.db)
        if len(keys) < batch:
            break
    return deleted


def uploads_strip(project: Project, cutoff: datetime, *, batch: int, max_batches: int) -> int:
    """Takes the bytes of files and images out of the project's messages older than `cutoff`; returns
    the files removed. Each file part becomes a text part naming it, which every reader and the model
    read as text (runs/media.py). Messages are read in key order from where the last batch stopped, so a
    message that only mentions "blob" is read once, not in every batch."""
    removed = 0
    after = ""
    for _ in range(max_batches):
        with transaction.atomic():
            # An encrypted message (threads/sealing.py) cannot be searched for "blob": each is read.
            rows = list(Message.objects.filter(Q(content__icontains='"blob"') | Q(content__icontains='"fernet:'),
                                               thread__project=project, created_at__lt=cutoff, pk__gt=after)
                        .order_by("pk").select_for_update(skip_locked=True, of=("self",))
                        .annotate(thread_sealed=F("thread__sealed")).only("pk", "content")[:batch])
            changed = []
            for message in rows:
                content, count = _without_blobs(message.content)
                if count:
                    # bulk_update skips the field's pre_save, where a message is encrypted.
                    message.content = seal_json(content) if message.thread_sealed else content
                    changed.append(message)
                    removed += count
            if changed:
                Message.objects.bulk_update(changed, ["content"])
        if len(rows) < batch:
            break
        after = rows[-1].pk
    return removed


def _without_blobs(blocks: Any) -> tuple[Any, int]:
    """The content with each file part that carries bytes replaced by a text part; and how many."""
    if not isinstance(blocks, list):
        return blocks, 0
    out, count = [], 0
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "resource" and (block.get("resource") or {}).get("blob"):
            resource = block["resource"]
            label = " ".join(filter(None, [resource.get("name"), f"({resource['mimeType']})"
                                           if resource.get("mimeType") else None])) or "a file"
            out.append({"type": "text", "text": f"[{label}: removed by the project's retention]"})
            count += 1
        elif isinstance(block, dict) and block.get("type") == "tool_result" and isinstance(block.get("content"), list):
            inner, n = _without_blobs(block["content"])
            out.append({**block, "content": inner} if n else block)
            count += n
        else:
            out.append(block)
    return out, count
