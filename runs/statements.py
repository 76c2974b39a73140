"""The end of a run as one statement written once (core/statements.py): the thread's lock released
and the run's outcome recorded, only while the run holds the lock.

On PostgreSQL both UPDATEs go in one statement (two data-modifying WITH clauses: the run is
updated only if the thread's was); SQLite has no such clauses, so there they are two statements in
the caller's transaction, still one database call.
"""
from __future__ import annotations

from typing import Any

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
