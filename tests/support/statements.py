"""Counting the SQL statements the run path sends, across the database worker threads.

`counting_statements()` swaps the process's database executor (core/db.py) for a
one-thread executor whose connection records every statement, so work done on any path that goes
through `db_call` is seen, whichever thread runs it. Transaction control (BEGIN, COMMIT, ROLLBACK,
SAVEPOINT, RELEASE) is left out: what is counted is the work, not how it is framed.
"""
from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Iterator

from django.db import connections

from core import db

_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")


class StatementLog:
    def __init__(self) -> None:
        self.statements: list[str] = []
        self.in_transaction: list[bool] = []  # for each statement: sent inside a transaction (atomic block)
        self.params: list = []  # for each statement: its parameters
        self._lock = threading.Lock()

    def __call__(self, execute, sql, params, many, context):
        if not sql.lstrip().upper().startswith(_CONTROL):
            with self._lock:
                self.statements.append(sql)
                self.in_transaction.append(context["connection"].in_atomic_block)
                self.params.append(params)
        return execute(sql, params, many, context)

    def __len__(self) -> int:
        return len(self.statements)

    def clear(self) -> None:
        with self._lock:
            self.statements.clear()
            self.in_transaction.clear()
            self.params.clear()

    def __str__(self) -> str:
        return "\n".join(f"{i + 1:>3}. {sql[:160]}" for i, sql in enumerate(self.statements))


def _warm() -> None:
    connection = connections["default"]
    connection.ensure_connection()
    getattr(connection.features, "supports_json_field", None)


@contextmanager
def counting_statements() -> Iterator[StatementLog]:
    log = StatementLog()

    def install() -> None:
        connections["default"].execute_wrappers.append(log)

    previous = db._executor
    db._executor = ThreadPoolExecutor(max_workers=1, initializer=install, thread_name_prefix="tambo-db-test")
    try:
        # What a connection does once in its life (SQLite's JSON feature probe) is not per run.
        db._executor.submit(_warm).result()
        log.clear()
        yield log
    finally:
        db._executor.submit(connections.close_all).result()
        db._executor.shutdown(wait=True)
        db._executor = previous


def selects_message_content(sql: str) -> bool:
    """Whether a statement reads messages' stored content: a SELECT naming the content column as a
    column, not inside a function (`LENGTH(CAST(content AS text))` reads a size, not the content),
    under the table's own name (the ORM) or an alias (threads/statements.py reads it as "m")."""
    return (sql.lstrip().upper().startswith("SELECT") and 'FROM "threads_message"' in sql
            and re.search(r'(?<!\()"\w+"\."content"', sql) is not None)
