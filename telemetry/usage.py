"""Recording and summing usage (spec section 18): the record of one short call, and the sums that
budgets and the usage page read. Runs are recorded by telemetry/runs.py with their end."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, Sum

from telemetry.models import Usage


def tokens_of(usage: dict[str, Any] | None) -> dict[str, int]:
    """A provider's token counts (OpenAI's names) as input/output/reasoning."""
    usage = usage or {}
    details = usage.get("completion_tokens_details") or {}
    reasoning = usage.get("reasoning_tokens", details.get("reasoning_tokens", 0) if isinstance(details, dict) else 0)
    return {"input": int(usage.get("prompt_tokens") or 0), "output": int(usage.get("completion_tokens") or 0),
            "reasoning": int(reasoning or 0)}


def usage_record_call(*, project_id: str, user_key: str, kind: str, model: str, provider: str,
                      usage: dict[str, Any] | None, duration_s: float | None, outcome: str,
                      error_code: str | None = None, thread_id: str | None = None) -> Usage:
    """Records one short, non-streamed model call (a thread name, suggestions, a chat completion)."""
    tokens = tokens_of(usage)
    return Usage.objects.create(
        project_id=project_id, user_key=user_key, kind=kind, thread_id=thread_id, model=model[:200],
        provider=provider[:40], input_tokens=tokens["input"], output_tokens=tokens["output"],
        reasoning_tokens=tokens["reasoning"],
        duration_ms=None if duration_s is None else round(duration_s * 1000), outcome=outcome, error_code=error_code)


@dataclass(frozen=True)
class UsageTotal:
    calls: int  # runs and short calls
    runs: int
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def usage_total(*, project_id: str, since: dt.datetime, user_key: str | None = None) -> UsageTotal:
    """What a project (or one of its users) spent since `since`: one aggregate query."""
    rows = Usage.objects.filter(project_id=project_id, created_at__gte=since)
    if user_key is not None:
        rows = rows.filter(user_key=user_key)
    sums = rows.aggregate(calls=Count("id"), runs=Count("id", filter=Q(kind=Usage.Kind.RUN)),
                          input_tokens=Sum("input_tokens"), output_tokens=Sum("output_tokens"),
                          reasoning_tokens=Sum("reasoning_tokens"))
    return UsageTotal(**{key: value or 0 for key, value in sums.items()})
