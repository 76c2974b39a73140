"""The statements of projects/ written by hand (docs/architecture.md#the-contracts: hand-written SQL
lives in a module named `statements.py`, and a contract keeps it there), each written once:

- the API key lookup, the first statement of every request made with a project key: the unrevoked
  key with a given hash and its project, in one statement (core/statements.py). There is no cache:
  a key revoked in the admin is refused at its very next request;
- the counters of run rates and token budgets (`LimitCounter`): projects/limits.py decides, these
  count, each in one statement (two or three on SQLite, which has no data-modifying CTE).
"""
from __future__ import annotations

import math
import time
from datetime import datetime, timezone as dt_timezone
from typing import Any, Callable

from django.db import connection, connections

from core.statements import Columns, execute, quote
from projects.limit_models import LimitCounter
from projects.models import ApiKey, Project, hash_api_key

_KEY = Columns(ApiKey, "k")
_PROJECT = Columns(Project, "p")
_PROJECT_OF_KEY = ApiKey._meta.get_field("project")


class KeyLookup:
    """`find(raw_key)`: the key (its project loaded) and the `extra` columns, or None.

    `extra(vendor)` is SQL for more columns read from the key's project row, under the alias `p`,
    in the same statement (the run path reads the project's server tools this way, tools/statements.py)."""

    def __init__(self, extra: Callable[[str], str] | None = None):
        self._extra = extra
        self._sql: dict[str, str] = {}

    def sql(self, vendor: str) -> str:
        sql = self._sql.get(vendor)
        if sql is None:
            extra = f", {self._extra(vendor)}" if self._extra is not None else ""
            sql = self._sql[vendor] = (
                f"SELECT {_KEY.sql}, {_PROJECT.sql}{extra} FROM {quote(ApiKey._meta.db_table)} k "
                f"JOIN {quote(Project._meta.db_table)} p ON p.{quote('id')} = k.{quote('project_id')} "
                f"WHERE k.{quote('hashed_key')} = %s AND NOT k.{quote('revoked')}")
        return sql

    def find(self, raw_key: str, *, using: str = "default") -> tuple[ApiKey, tuple[Any, ...]] | None:
        connection = connections[using]
        rows, _ = execute(self.sql(connection.vendor), [hash_api_key(raw_key)], using=using)
        if not rows:
            return None
        row = rows[0]
        key = _KEY.instance(row[:len(_KEY)], connection)
        _PROJECT_OF_KEY.set_cached_value(key, _PROJECT.instance(row[len(_KEY):len(_KEY) + len(_PROJECT)], connection))
        return key, row[len(_KEY) + len(_PROJECT):]


KEY_LOOKUP = KeyLookup()


# The limits' counters (projects/limits.py): a window's count of runs, requests or tokens, by
# project (user_key PROJECT) and by end user.
TABLE = LimitCounter._meta.db_table
PROJECT = ""  # the user_key of a project's own counters (no end user is stored as "")
RUNS, TOKENS, REQUESTS = "runs", "tokens", "requests"
MINUTE, DAY = 60, 86400


def _today_token_rows(project_id: str, keys, tokens: int) -> tuple[str, list]:
    """VALUES rows adding `tokens` to today's token count of each of `keys`, and their parameters (the
    day cut by the database's clock on PostgreSQL, as the admission cuts it)."""
    if connection.vendor == "postgresql":
        day, day_params = "(date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')", []
    else:
        day, day_params = "%s", [_window_value(time.time(), DAY)]
    params: list = []
    for key in keys:
        params += [project_id, key, *day_params, tokens]
    return ", ".join([f"(%s, %s, '{TOKENS}', {day}, %s)"] * len(keys)), params


def counters_tokens_add(project_id: str, keys: list[str], tokens: int) -> None:
    """Adds `tokens` (negative: gives them back) to today's token counts of `keys`, in one statement."""
    rows, params = _today_token_rows(project_id, keys, tokens)
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {TABLE} AS c (project_id, user_key, kind, window_start, count) VALUES {rows} "
                       "ON CONFLICT (project_id, user_key, kind, window_start) "
                       "DO UPDATE SET count = c.count + EXCLUDED.count", params)


def counters_tokens_reserve(project_id: str, room: dict[str, int], tokens: int) -> set[str]:
    """Adds `tokens` (negative: gives them back) to today's token counts of `room`'s keys, each only
    while its count is under its value (the conditional upsert of the admission), in one statement;
    answers the keys it changed."""
    rows, params = _today_token_rows(project_id, room, tokens)
    with connection.cursor() as cursor:
        cursor.execute(_upsert(rows), params + _limits_params(room))
        return {row[0] for row in cursor.fetchall()}


def _window_value(now: float, window: int):
    start = datetime.fromtimestamp(math.floor(now / window) * window, tz=dt_timezone.utc)
    return connection.ops.adapt_datetimefield_value(start)


def _rate_rows(project_id: str, rates: dict[str, int], window: str) -> tuple[str, list]:
    rows = ", ".join([f"(%s, %s, %s, {window}, 1)"] * len(rates))
    params: list = []
    for key in rates:
        params += [project_id, key, RUNS]
    return rows, params


def _upsert(rows: str) -> str:
    """Raises each row's count by its value (`EXCLUDED.count`) only while it is under its key's limit
    (two parameters: the project's limit, the user's); answers the keys raised (or inserted)."""
    return (f"INSERT INTO {TABLE} AS c (project_id, user_key, kind, window_start, count) VALUES {rows} "
            "ON CONFLICT (project_id, user_key, kind, window_start) DO UPDATE SET count = c.count + EXCLUDED.count "
            "WHERE c.count < CASE WHEN c.user_key = '' THEN %s ELSE %s END RETURNING user_key")


def _limits_params(limits_by_key: dict[str, int]) -> list[int]:
    return [limits_by_key.get(PROJECT, 0), next((limit for key, limit in limits_by_key.items() if key != PROJECT), 0)]


def counters_admit(project_id: str, rates: dict[str, int], budgets: dict[str, int], reserve: int):
    """Counts one run against `rates` ({user key: runs a minute}) and reserves `reserve` tokens against
    `budgets` ({user key: tokens a day}), each only while under its limit, and reads the day's token
    counts. Answers (keys whose run count was raised, tokens spent today by key before this statement,
    the clock in epoch seconds, keys whose day count took the `reserve`)."""
    token_keys = list(budgets)
    tokens_where = (f"project_id = %s AND kind = '{TOKENS}' AND window_start = {{day}} AND user_key IN "
                    f"({', '.join(['%s'] * len(token_keys))})")
    if connection.vendor == "postgresql":
        return _admit_postgresql(project_id, rates, budgets, tokens_where, reserve)
    return _admit_sqlite(project_id, rates, budgets, tokens_where, reserve)


def _admit_postgresql(project_id, rates, budgets, tokens_where, reserve):
    # The database's clock cuts the windows, so every process counts in the same one. The SELECT of
    # the day's counts sees them as they were before this statement's own changes.
    minute = "date_trunc('minute', now())"
    day = "(date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')"
    parts, params, ctes = [], [], []
    if rates:
        rows, rate_params = _rate_rows(project_id, rates, minute)
        ctes.append("up AS (" + _upsert(rows) + ")")
        params += rate_params + _limits_params(rates)
        parts.append(f"SELECT '{RUNS}', user_key, 0 FROM up")
    if budgets and reserve:
        ctes.append("res AS (" + _upsert(", ".join([f"(%s, %s, '{TOKENS}', {day}, %s)"] * len(budgets))) + ")")
        for key in budgets:
            params += [project_id, key, reserve]
        params += _limits_params(budgets)
        parts.append("SELECT 'reserved', user_key, 0 FROM res")
    if budgets:
        parts.append(f"SELECT '{TOKENS}', user_key, count FROM {TABLE} WHERE " + tokens_where.format(day=day))
        params += [project_id, *budgets]
    parts.append("SELECT 'now', '', CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS bigint)")
    with_clause = ("WITH " + ", ".join(ctes) + " ") if ctes else ""
    with connection.cursor() as cursor:
        cursor.execute(with_clause + " UNION ALL ".join(parts), params)
        answer = cursor.fetchall()
    counted = {key for kind, key, _ in answer if kind == RUNS}
    reserved = {key for kind, key, _ in answer if kind == "reserved"}
    spent = {key: count for kind, key, count in answer if kind == TOKENS}
    now = next(count for kind, _, count in answer if kind == "now") / 1000
    return counted, spent, now, reserved


def _admit_sqlite(project_id, rates, budgets, tokens_where, reserve):
    # SQLite runs on one machine: its processes share the clock this reads, and its writes are serial.
    now = time.time()
    counted: set[str] = set()
    reserved: set[str] = set()
    spent: dict[str, int] = {}
    with connection.cursor() as cursor:
        if budgets:
            cursor.execute(f"SELECT user_key, count FROM {TABLE} WHERE " + tokens_where.format(day="%s"),
                           [project_id, _window_value(now, DAY), *budgets])
            spent = dict(cursor.fetchall())
        if rates:
            rows = ", ".join(["(%s, %s, %s, %s, 1)"] * len(rates))
            params: list = []
            for key in rates:
                params += [project_id, key, RUNS, _window_value(now, MINUTE)]
            cursor.execute(_upsert(rows), params + _limits_params(rates))
            counted = {row[0] for row in cursor.fetchall()}
        if budgets and reserve:
            rows = ", ".join(["(%s, %s, %s, %s, %s)"] * len(budgets))
            params = []
            for key in budgets:
                params += [project_id, key, TOKENS, _window_value(now, DAY), reserve]
            cursor.execute(_upsert(rows), params + _limits_params(budgets))
            reserved = {row[0] for row in cursor.fetchall()}
    return counted, spent, now, reserved


def counters_request_count(project_id: str, bucket: str, limit: int) -> tuple[int, int]:
    """Counts one request of `bucket` in the current minute while the minute holds fewer than `limit`,
    in one statement; answers (the requests counted: 1, or 0 when the minute was full; the clock in
    epoch milliseconds)."""
    if connection.vendor == "postgresql":
        window, window_params = "date_trunc('minute', now())", []
        clock = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS bigint)"
    else:
        now = time.time()
        window, window_params, clock = "%s", [_window_value(now, MINUTE)], str(int(now * 1000))
    upsert = _upsert(f"(%s, %s, '{REQUESTS}', {window}, 1)")
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"WITH up AS ({upsert}) SELECT (SELECT count(*) FROM up), {clock}",
                           [project_id, bucket, *window_params, limit, limit])
            admitted, millis = cursor.fetchone()
        else:  # no data-modifying CTE: the upsert's RETURNING alone
            cursor.execute(upsert, [project_id, bucket, *window_params, limit, limit])
            admitted, millis = len(cursor.fetchall()), int(clock)
    return admitted, millis
