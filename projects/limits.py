"""Run rates and token budgets, enforced across every server process (docs/abuse-and-limits.md).

The counters are rows of one table (`LimitCounter`), so every process on one database shares them;
PostgreSQL alone is enough (and SQLite on one machine). For each call that may reach a model (all
through telemetry/calls.py, the one door of model calls, but a run's start in runs/services.py):

- `call_admit` before it: counts one run against the minute windows of the user and the project and
  reads the day's token counts, in ONE statement on PostgreSQL (two on SQLite, which has no
  data-modifying CTE). A window's count is raised only while it is under the limit, in the same
  statement that checks it (`ON CONFLICT … DO UPDATE … WHERE count < limit`), so of any number of
  concurrent requests exactly the limit get in. Over a rate: 429 `RATE_LIMITED`; over a budget: 429
  `BUDGET_EXCEEDED`; both with a positive `Retry-After` (the end of the window). A run also reserves
  its worst case in tokens in the same statement, the same way (up to three statements on SQLite).
- `step_admit` before each later model call of a run: that call's worst case reserved the same way,
  the run's finished steps settled in the same statement (what they used in place of what was
  reserved for them).
- `call_record` after it (for a run: with its end, never per step): adds the tokens it used, less
  what it reserved, to the day's counts of the user and the project, in one statement.
- `requests_admit`: the gateway's request rate per caller (an API key, a session), counted in the
  same table the same way, so it too is one count across every process with no shared cache.

Windows are cut by the database's clock on PostgreSQL, so processes whose clocks disagree still count
in the same window. A project's run rate is the server's DEFAULT_RUNS_PER_MINUTE unless it sets its own
(projects/config.py `run_rate`); a project whose limits are all off pays nothing: no statement at all.
This module decides; the statements that count are in projects/statements.py (`counters_*`).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import datetime, timezone as dt_timezone
from typing import Callable

from core.problems import Problem
from projects.config import Limits, project_settings, run_rate
from projects.limit_models import LimitCounter
from projects.statements import (DAY, MINUTE, PROJECT, REQUESTS, RUNS, counters_admit, counters_request_count,
                                 counters_tokens_add, counters_tokens_reserve)
from providers.base import ModelError

# Told of every refusal, with the project and the limit's setting name (`runs_per_minute_per_user` …):
# telemetry counts them (tambo_rate_limited_total). It registers itself at start-up because projects
# sits below telemetry in the import layers and cannot name it.
_refusal_listeners: list[Callable[[object, str], None]] = []


def on_refusal(listener: Callable[[object, str], None]) -> None:
    """Calls `listener(project, limit)` at each refusal of `call_admit` (once per listener)."""
    if listener not in _refusal_listeners:
        _refusal_listeners.append(listener)


def _refused(project, limit: str, problem: Problem) -> Problem:
    for listener in _refusal_listeners:
        listener(project, limit)
    return problem


@dataclass(frozen=True)
class Budget:
    """What a run admitted at `call_admit` may still spend: the fewest tokens left in any budget."""

    remaining: int
    # Tokens added to the day's counts at admission (the call's worst case); the end reconciles them.
    reserved: int = 0

    def exhausted(self, used: int) -> bool:
        return used >= self.remaining


def budget_check(budget: Budget | None, usage: dict | None) -> None:
    """Before each model call of a run: a run that crossed its budget makes no further call. Raises
    providers.base.ModelError("BUDGET_EXCEEDED"), which ends the run with RUN_ERROR."""
    if budget is not None and budget.exhausted(tokens_of(usage)):
        raise ModelError("BUDGET_EXCEEDED", "The token budget ran out during this run.", retryable=False)


def model_calls_limit(project, server_limit: int) -> int:
    """The most model calls one run of `project` makes: the lower of its `modelCallsPerRun` and the
    server's (0: the server's)."""
    own = _limits(project).model_calls_per_run
    return min(own, server_limit) if own > 0 else server_limit


def step_admit(*, project, user_key: str | None, usage: dict | None, reserved: int = 0, reserve: int = 0) -> int:
    """Before each model call of a run that its start did not admit: the call's worst case (`reserve`,
    its input estimate plus its output cap) reserved against the day's budgets as they stand now
    (other runs and processes spent or reserved meanwhile), the way `call_admit` reserves a run's
    start, so N runs stepping together overshoot a budget by at most one step's reservation, not N.
    In the same statement the run's finished steps are settled: what they used (`usage`) takes the
    place of what the run had reserved for them (`reserved`), so the counts hold the run's tokens so
    far plus this call's worst case, never the sum of every step's worst case, and the check sees
    them so. Answers the tokens added to the day's counts (negative: given back), which the run adds
    to its reservation; its end reconciles the whole with what it used (`call_record`). Raises
    providers.base.ModelError("BUDGET_EXCEEDED"), which ends the run with RUN_ERROR, its counts left
    as they were. One statement; none without budgets. The run rate counts the run once, at
    `call_admit`."""
    limits = _limits(project)
    budgets = {key: limit for key, limit in ((user_key, limits.tokens_per_day_per_user),
                                             (PROJECT, limits.tokens_per_day)) if key is not None and limit > 0}
    if not budgets:
        return 0
    settled = tokens_of(usage) - reserved  # the finished steps' tokens beyond (negative: under) their reservation
    tokens = max(0, reserve) + settled
    # A count is raised only while it, settled, is under its budget.
    room = {key: limit - settled for key, limit in budgets.items()}
    if min(room.values()) > 0:
        taken = counters_tokens_reserve(project.pk, room, tokens)
        refused = [key for key in room if key not in taken]
    else:  # the run alone is past a budget: no statement
        taken, refused = set(), [key for key, left in room.items() if left <= 0]
    if not refused:
        return tokens
    if taken:
        counters_tokens_add(project.pk, sorted(taken), -tokens)  # a refused step changes no count
    for listener in _refusal_listeners:
        listener(project, "tokens_per_day_per_user" if refused[0] else "tokens_per_day")
    raise ModelError("BUDGET_EXCEEDED", "The token budget ran out during this run.", retryable=False)


def tokens_of(usage: dict | None) -> int:
    """The tokens a call used, from the provider's usage (OpenAI's names)."""
    if not usage:
        return 0
    total = usage.get("total_tokens")
    if isinstance(total, int) and not isinstance(total, bool):
        return max(total, 0)
    return sum(max(usage.get(k) or 0, 0) for k in ("prompt_tokens", "completion_tokens")
               if isinstance(usage.get(k), int))


def _limits(project) -> Limits:
    return project_settings(project).limits


def _retry_after(now: float, window: int) -> int:
    # Never 0: a caller told to wait 0 s would repeat the refused call at once.
    return max(1, math.ceil((math.floor(now / window) + 1) * window - now))


def call_admit(*, project, user_key: str | None, reserve: int = 0) -> Budget | None:
    """Admits one call that may reach a model (a run, a name, suggestions, a gateway completion,
    a transcription), or raises 429 Problem. `user_key` is the stored key of the end user (None for a
    call with no user: only the project's limits apply). Answers the token budget left, or None when
    the project has no budget. Holds no lock and no transaction of its own.

    `reserve`, the call's worst case in tokens (a run's input estimate plus its output cap), is added
    to the day's counts in the admitting statement, and only while each count is under its budget: of
    N concurrent calls, those admitted past the budget overshoot it by at most one reservation each
    key's row saw last, not N. The call's end passes `reserved=` to `call_record`, which adds what was
    used minus what was reserved."""
    limits = _limits(project)
    rates = {key: limit for key, limit in ((user_key, limits.runs_per_minute_per_user),
                                           (PROJECT, run_rate(limits))) if key is not None and limit > 0}
    budgets = {key: limit for key, limit in ((user_key, limits.tokens_per_day_per_user),
                                             (PROJECT, limits.tokens_per_day)) if key is not None and limit > 0}
    if not rates and not budgets:
        return None
    reserve = max(0, reserve) if budgets else 0
    counted, spent, now, reserved = counters_admit(project.pk, rates, budgets, reserve)
    # With a reservation, a budget refuses when its row was at the limit as the statement took it;
    # without one, when the day's count read is.
    over = [key for key, limit in budgets.items() if (key not in reserved if reserve else spent.get(key, 0) >= limit)]
    rate_refused = [key for key in rates if key not in counted]
    if reserved and (over or rate_refused):
        counters_tokens_add(project.pk, sorted(reserved), -reserve)  # a refused call keeps nothing reserved
    for key in over:
        who = "this user's" if key else "the project's"
        raise _refused(project, "tokens_per_day_per_user" if key else "tokens_per_day", Problem(
            429, "BUDGET_EXCEEDED", f"Over {who} token budget for today ({budgets[key]} tokens).",
            retryAfter=_retry_after(now, DAY)))
    for key in rate_refused:
        who = "this user" if key else "the project"
        raise _refused(project, "runs_per_minute_per_user" if key else "runs_per_minute", Problem(
            429, "RATE_LIMITED", f"Over the run rate for {who} ({rates[key]} a minute).",
            retryAfter=_retry_after(now, MINUTE)))
    if not budgets:
        return None
    return Budget(remaining=min(limit - spent.get(key, 0) for key, limit in budgets.items()), reserved=reserve)


def call_record(*, project, user_key: str | None, usage: dict | None, reserved: int = 0) -> None:
    """Adds a finished call's tokens to the day's counts, less what its admission reserved (one
    statement; none without budgets, or when the two are equal)."""
    limits = _limits(project)
    tokens = tokens_of(usage) - reserved
    keys = [key for key, limit in ((user_key, limits.tokens_per_day_per_user), (PROJECT, limits.tokens_per_day))
            if key is not None and limit > 0]
    if not tokens or not keys:
        return
    counters_tokens_add(project.pk, keys, tokens)


def requests_admit(*, project, bucket: str, limit: int) -> int | None:
    """Counts one gateway request of `bucket` (`Principal.rate_limit_key`) in the current minute,
    across every process; answers the seconds to wait when the minute already holds `limit`, else
    None. One statement; none when `limit` is 0 or less. Of any number of concurrent requests exactly
    `limit` get in (the count is raised only while it is under the limit, as for run rates)."""
    if limit <= 0:
        return None
    admitted, millis = counters_request_count(project.pk, bucket, limit)
    return None if admitted else _retry_after(millis / 1000, MINUTE)


def counters_prune(*, older_than_days: int) -> int:
    """Deletes the counters no limit reads any more, in one statement: run counts older than a day
    and request counts (each matters for its minute only) and token counts older than `older_than_days`
    (USAGE_RETENTION_DAYS, kept for the operator's view of what was spent)."""
    from django.db.models import Q

    now = time.time()
    day_ago = datetime.fromtimestamp(now - DAY, tz=dt_timezone.utc)
    cutoff = datetime.fromtimestamp(now - max(older_than_days, 1) * DAY, tz=dt_timezone.utc)
    old = LimitCounter.objects.filter(Q(kind__in=(RUNS, REQUESTS), window_start__lt=day_ago) | Q(window_start__lt=cutoff))
    # Nothing refers to a counter and no signal listens: a bare DELETE (QuerySet.delete would wrap it
    # in a transaction of its own and count what it deletes first).
    return old._raw_delete(old.db)
