"""Recording and summing usage (docs/abuse-and-limits.md): the record of one short call, and the sums that
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


@dataclass
class DailyUsage:
    """Per-day series for the usage page's charts, over `days` (ISO dates, oldest first)."""

    days: list[str]
    tokens: dict[str, list[float]]  # "project · model" -> tokens per day
    runs: dict[str, list[float]]
    error_rate: dict[str, list[float | None]]  # "project" -> % of runs failed per day
    ttft: dict[str, list[float | None]]  # "p50" / "p95" -> ms per day
    total_tokens: int
    total_runs: int
    failed_runs: int


def usage_daily(rows, *, days: int = 30, until: dt.date | None = None) -> DailyUsage:
    """Sums `rows` (a Usage queryset, already filtered by project, period …) per day and series:
    two aggregate queries and one read of the runs' times to first token."""
    from django.db.models.functions import TruncDate

    until = until or dt.datetime.now(dt.timezone.utc).date()
    day_list = [(until - dt.timedelta(days=offset)).isoformat() for offset in range(days - 1, -1, -1)]
    index = {day: i for i, day in enumerate(day_list)}
    since = dt.datetime.combine(until - dt.timedelta(days=days - 1), dt.time.min, tzinfo=dt.timezone.utc)
    rows = rows.filter(created_at__gte=since).annotate(day=TruncDate("created_at", tzinfo=dt.timezone.utc))
    tokens: dict[str, list[float]] = {}
    runs: dict[str, list[float]] = {}
    per_project: dict[str, list[list[int]]] = {}
    total_tokens = total_runs = failed_runs = 0
    grouped = rows.values("day", "project__name", "model").annotate(
        tokens=Sum("input_tokens") + Sum("output_tokens"), runs=Count("id", filter=Q(kind=Usage.Kind.RUN)),
        failed=Count("id", filter=Q(kind=Usage.Kind.RUN, outcome=Usage.Outcome.FAILED)))
    for row in grouped:
        i = index.get(row["day"].isoformat())
        if i is None:
            continue
        name = f"{row['project__name']} · {row['model'] or '?'}"
        tokens.setdefault(name, [0.0] * days)[i] += row["tokens"] or 0
        runs.setdefault(name, [0.0] * days)[i] += row["runs"]
        counts = per_project.setdefault(row["project__name"], [[0, 0] for _ in range(days)])
        counts[i][0] += row["runs"]
        counts[i][1] += row["failed"]
        total_tokens += row["tokens"] or 0
        total_runs += row["runs"]
        failed_runs += row["failed"]
    error_rate = {project: [100.0 * failed / total if total else None for total, failed in counts]
                  for project, counts in per_project.items()}
    samples: list[list[int]] = [[] for _ in range(days)]
    for day, ttft in rows.filter(kind=Usage.Kind.RUN, ttft_ms__isnull=False).values_list("day", "ttft_ms"):
        i = index.get(day.isoformat())
        if i is not None:
            samples[i].append(ttft)
    ttft = {"p50": [percentile(s, 50) for s in samples], "p95": [percentile(s, 95) for s in samples]}
    return DailyUsage(days=day_list, tokens=tokens, runs=runs, error_rate=error_rate, ttft=ttft,
                      total_tokens=total_tokens, total_runs=total_runs, failed_runs=failed_runs)


def percentile(values: list[int], pct: float) -> float | None:
    """The nearest-rank percentile of `values` (None for none)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))  # ceil
    return float(ordered[int(rank) - 1])
