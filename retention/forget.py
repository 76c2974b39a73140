"""Forgetting one end user of a project (GDPR Article 17): `DELETE /v1/users/{userKey}` and
`manage.py forget_user` both call `user_forget` (docs/operations.md#retention-and-deletion).

What goes: the user's threads with their messages (and so the files in them), suggestions, runs and
run events; the limit counters kept for them; their memories, live and forgotten (memory/); their
grants and unfinished authorisations for protected MCP servers (tools/mcp_vault.py). What stays,
without the user: their usage rows, whose
`user_key` is emptied, so what the project spent still adds up. Access tokens are not stored (they are
signed, and expire on their own: docs/protocol.md#identity-by-token), so there is nothing of them to
delete. Threads a live run holds are left and counted (`threadsBusy`): call again once the run ended.
"""
from __future__ import annotations

from collections import Counter

from core.problems import Problem
from memory.services import memories_delete_user
from projects.identities import STORED_MAX_LENGTH
from projects.limit_models import LimitCounter
from projects.models import Project
from retention.batches import BATCH, threads_delete
from runs.models import Run, RunEvent
from telemetry.models import Usage
from threads.models import Message, Suggestion, Thread
from tools.mcp_vault import user_grants_forget

# The report's names for what was removed, by model (camelCase, as the route answers).
REPORT_NAMES = {Thread: "threads", Message: "messages", Suggestion: "suggestions", Run: "runs",
                RunEvent: "runEvents", LimitCounter: "limitCounters"}


def user_key_check(user_key: str) -> str:
    if not user_key or len(user_key) > STORED_MAX_LENGTH:
        raise Problem(400, "VALIDATION_ERROR", f"userKey must be 1 to {STORED_MAX_LENGTH} characters.")
    return user_key


def user_forget(*, project: Project, user_key: str, batch: int = BATCH) -> dict[str, int]:
    """Removes the user's data from the project (the module docstring says what); returns the counts
    of what was removed and `threadsBusy`. Every step is batched in short transactions: a user with
    many threads never holds a long lock; a failure part-way leaves what is left for the next call."""
    user_key_check(user_key)
    threads = Thread.objects.filter(project=project, user_key=user_key)
    removed: Counter = threads_delete(threads, batch=batch)
    counters = LimitCounter.objects.filter(project=project, user_key=user_key)
    removed[LimitCounter._meta.label] = counters._raw_delete(counters.db)
    report = {name: removed.get(model._meta.label, 0) for model, name in REPORT_NAMES.items()}
    report["memories"] = memories_delete_user(project=project, user_key=user_key, batch=batch)
    report["mcpGrants"] = user_grants_forget(project=project, user_key=user_key)
    report["usageRowsAnonymized"] = usage_anonymize(project, user_key, batch=batch)
    report["threadsBusy"] = threads.count()
    return report


def usage_anonymize(project: Project, user_key: str, *, batch: int) -> int:
    """Empties `user_key` on the user's usage rows, `batch` rows a statement; returns rows changed."""
    changed = 0
    while True:
        ids = list(Usage.objects.filter(project=project, user_key=user_key).values_list("id", flat=True)[:batch])
        if not ids:
            return changed
        changed += Usage.objects.filter(id__in=ids).update(user_key="")
