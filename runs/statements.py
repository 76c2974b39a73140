"""The end of a run as one statement written once (core/statements.py): the thread's lock released
and the run's outcome recorded, only while the run holds the lock.

On PostgreSQL both UPDATEs go in one statement (two data-modifying WITH clauses: the run is
updated only if the thread's was); SQLite has no such clauses, so there they are two statements in
the caller's transaction, still one database call.
"""
from __future__ import annotations

import json
from typing import Any

import orjson
from django.db import connections

from core.statements import execute, prepare, quote
from runs.models import THIS_PROCESS, Run
from threads.models import RunStatus, Thread

_SQL: dict[tuple, tuple[str, ...]] = {}


def _assignments(model, names: tuple[str, ...]) -> str:
    return ", ".join(f"{quote(model._meta.get_field(n).column)} = %s" for n in names)


def _statements(vendor: str, thread_names: tuple[str, ...], run_names: tuple[str, ...]) -> tuple[str, ...]:
    key = (vendor, thread_names, run_names)
    cached = _SQL.get(key)
    if cached is None:
        thread = (f"UPDATE {quote(Thread._meta.db_table)} SET {_assignments(Thread, thread_names)} "
                  f"WHERE {quote('id')} = %s AND {quote('current_run_id')} = %s AND {quote('run_status')} <> %s "
                  # The lease's fence: a process another took the run over from releases nothing.
                  f"AND EXISTS (SELECT 1 FROM {quote(Run._meta.db_table)} WHERE {quote('id')} = %s "
                  f"AND ({quote('owner')} IS NULL OR {quote('owner')} = %s))")
        run = f"UPDATE {quote(Run._meta.db_table)} SET {_assignments(Run, run_names)} WHERE {quote('id')} = %s"
        if vendor == "postgresql":
            cached = (f"WITH released AS ({thread} RETURNING 1), "
                      f"ended AS ({run} AND EXISTS (SELECT 1 FROM released) RETURNING 1) "
                      f"SELECT count(*) FROM released",)
        else:
            cached = (thread, run)
        _SQL[key] = cached
    return cached


def _values(model, values: dict[str, Any], connection) -> list[Any]:
    return [prepare(model._meta.get_field(name), value, connection) for name, value in values.items()]


def run_release(*, thread_id: str, run_id: str, thread_values: dict[str, Any], run_values: dict[str, Any]) -> bool:
    """Sets `thread_values` on the thread and `run_values` on the run if `run_id` holds the thread's
    lock and no other process took the run over (`Run.owner`); True if it did. On SQLite the caller holds the transaction that makes the two statements one."""
    connection = connections["default"]
    statements = _statements(connection.vendor, tuple(thread_values), tuple(run_values))
    thread_params = [*_values(Thread, thread_values, connection), thread_id, run_id, RunStatus.IDLE, run_id,
                     THIS_PROCESS]
    run_params = [*_values(Run, run_values, connection), run_id]
    if len(statements) == 1:
        rows, _ = execute(statements[0], thread_params + run_params)
        return bool(rows[0][0])
    _, released = execute(statements[0], thread_params)
    if not released:
        return False
    execute(statements[1], run_params)
    return True


# The watcher's per-tick statements over all the runs a process streams (runs/control.py, runs/renewal.py).
# The ORM writes `id IN (%s, %s, …)` with a parameter per run: a new statement text for every count, which
# psycopg splits anew each time, and a compile of one lookup per id. With 500 runs a process, those two
# statements cost 15 % of a serving process's CPU at 2,000 streams (py-spy, docs/benchmarks.md#several-hosts).
# Here the ids go as one parameter (an array on PostgreSQL, a JSON list on SQLite): one text whatever the count.
def _ids_in(vendor: str) -> str:
    return "= ANY(%s)" if vendor == "postgresql" else "IN (SELECT value FROM json_each(%s))"


def _ids(vendor: str, ids: list[str]) -> Any:
    return list(ids) if vendor == "postgresql" else json.dumps(list(ids))


_run_t, _thread_t = quote(Run._meta.db_table), quote(Thread._meta.db_table)
_OWNED = f"({quote('owner')} IS NULL OR {quote('owner')} = %s)"  # runs/lock.py OWNED


def leases_renew(*, run_ids: list[str], until) -> int:
    """Sets `until` as the lease of each thread one of `run_ids` holds, while this process owns the run
    (a lease lost to a takeover must run out for its new owner too); returns how many."""
    connection = connections["default"]
    vendor = connection.vendor
    sql = (f"UPDATE {_thread_t} SET {quote('lease_expires_at')} = %s WHERE {quote('run_status')} <> %s "
           f"AND {quote('current_run_id')} IN (SELECT {quote('id')} FROM {_run_t} "
           f"WHERE {quote('id')} {_ids_in(vendor)} AND {_OWNED})")
    until = prepare(Thread._meta.get_field("lease_expires_at"), until, connection)
    return execute(sql, [until, RunStatus.IDLE, _ids(vendor, run_ids), THIS_PROCESS])[1]


def cancels_flagged(*, run_ids: list[str]) -> list[str]:
    """Those of `run_ids` that a cancel flagged (from any process)."""
    vendor = connections["default"].vendor
    sql = f"SELECT {quote('id')} FROM {_run_t} WHERE {quote('id')} {_ids_in(vendor)} AND {quote('cancel_requested')}"
    return [row[0] for row in execute(sql, [_ids(vendor, run_ids)])[0]]


def checkpoints_store(*, checkpoints: dict[str, tuple[str, str]]) -> int:
    """Stores {run id: (message id, text)} as each owned run's partial message; returns rows changed.
    One UPDATE joined to the values (not a CASE per run, which PostgreSQL evaluates for every row).

    The values go as one JSON text on both databases: Django's cursor on PostgreSQL binds on the
    client, and psycopg's text form of a text[] escapes each element in Python, 17 µs for a short
    JSON string (2 µs for an id): most of the 7 % of a serving process's CPU these checkpoints took."""
    vendor = connections["default"].vendor
    if vendor == "postgresql":
        values = "(SELECT e->>0 AS id, e->>1 AS mid, e->>2 AS txt FROM json_array_elements(%s::json) AS e) AS v"
    else:
        values = ("(SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS mid, "
                  "json_extract(value, '$[2]') AS txt FROM json_each(%s)) AS v")
    rows = orjson.dumps([[rid, mid, text] for rid, (mid, text) in checkpoints.items()]).decode()
    sql = (f"UPDATE {_run_t} SET {quote('partial_message_id')} = v.mid, {quote('partial_text')} = v.txt "
           f"FROM {values} WHERE {_run_t}.{quote('id')} = v.id AND {_OWNED}")
    return execute(sql, [rows, THIS_PROCESS])[1]
