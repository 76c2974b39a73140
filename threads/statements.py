"""The run path's read-and-lock of a requester's thread as a statement written once
(core/statements.py), with more columns of the caller's in the same statement (the project's server
tools, tools/statements.py). threads.services `thread_lock` is the general form of the same lock.
"""
from __future__ import annotations

from typing import Callable

from django.db import connections

from core.problems import Problem
from core.statements import Columns, execute, quote
from threads.models import Thread

_THREAD = Columns(Thread, "t")


class ScopedThreadLock:
    """`lock(...)`: the requester's thread row, read and locked for the caller's open transaction
    (`SELECT … FOR UPDATE OF t` on PostgreSQL; SQLite's IMMEDIATE transaction holds the write lock
    already), with the `extra` columns set on it as attributes named `names`."""

    def __init__(self, extra: Callable[[str, str], str], names: tuple[str, ...]):
        self._extra, self._names = extra, names
        self._sql: dict[str, str] = {}

    def _statement(self, vendor: str) -> str:
        sql = self._sql.get(vendor)
        if sql is None:
            lock = " FOR UPDATE OF t" if vendor == "postgresql" else ""
            sql = self._sql[vendor] = (
                f"SELECT {_THREAD.sql}, {self._extra(vendor, 't.' + quote('project_id'))} "
                f"FROM {quote(Thread._meta.db_table)} t WHERE t.{quote('id')} = %s "
                f"AND t.{quote('project_id')} = %s AND t.{quote('user_key')} = %s{lock}")
        return sql

    def lock(self, *, thread_id: str, project_id: str, user_key: str) -> Thread:
        """Raises Problem 404 THREAD_NOT_FOUND when no row matches (unknown, or not the requester's)."""
        connection = connections["default"]
        rows, _ = execute(self._statement(connection.vendor), [thread_id, project_id, user_key])
        if not rows:
            raise Problem(404, "THREAD_NOT_FOUND", f"Thread {thread_id} was not found.")
        thread = _THREAD.instance(rows[0][:len(_THREAD)], connection)
        for name, value in zip(self._names, rows[0][len(_THREAD):]):
            setattr(thread, name, value)
        return thread
