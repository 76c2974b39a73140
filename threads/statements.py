"""The run path's statements on threads and messages, written once (core/statements.py): the
read-and-lock of a requester's thread, with more columns of the caller's in the same statement (the
project's server tools, tools/statements.py; threads.services `thread_lock` is the general form of
the same lock), the locked thread's UPDATE, and the reads of a starting run's history.
"""
from __future__ import annotations

from typing import Callable

from django.db import connections

from core.problems import Problem
from core.statements import Columns, Update, execute, quote
from threads.models import Message, Thread

_THREAD = Columns(Thread, "t")
_MESSAGE = Columns(Message, "m")

# What `thread.save()` writes for the thread row the lock holds (runs/lock.py).
THREAD_UPDATE = Update(Thread)


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


# A thread's messages in their order, as `thread.messages.order_by("created_at", "id")` reads them,
# and newest first in batches (the keyset of threads/selectors.py `message_list_newest`).
_MESSAGES = f"SELECT {_MESSAGE.sql} FROM {quote(Message._meta.db_table)} m WHERE m.{quote('thread_id')} = %s"
_OLDEST_FIRST = f"{_MESSAGES} ORDER BY m.{quote('created_at')}, m.{quote('id')}"
_NEWEST_FIRST = f"{_MESSAGES} ORDER BY m.{quote('created_at')} DESC, m.{quote('id')} DESC LIMIT %s"
_OLDER_NEWEST_FIRST = (f"{_MESSAGES} AND (m.{quote('created_at')} < %s OR (m.{quote('created_at')} = %s "
                       f"AND m.{quote('id')} < %s)) ORDER BY m.{quote('created_at')} DESC, m.{quote('id')} DESC LIMIT %s")


def _messages(thread: Thread, sql: str, params: list) -> list[Message]:
    connection = connections["default"]
    rows, _ = execute(sql, params)
    cache = Message._meta.get_field("thread").set_cached_value
    messages = []
    for row in rows:
        message = _MESSAGE.instance(row, connection)
        cache(message, thread)  # as the related manager does: `message.thread` needs no query
        messages.append(message)
    return messages


def messages_oldest_first(thread: Thread) -> list[Message]:
    return _messages(thread, _OLDEST_FIRST, [thread.pk])


def messages_newest_first(thread: Thread, *, limit: int, before: Message | None = None) -> list[Message]:
    """Up to `limit` of the thread's messages, newest first; older than `before` when given."""
    if before is None:
        return _messages(thread, _NEWEST_FIRST, [thread.pk, limit])
    created_at = Message._meta.get_field("created_at").get_db_prep_value(before.created_at, connections["default"])
    return _messages(thread, _OLDER_NEWEST_FIRST, [thread.pk, created_at, created_at, before.pk, limit])
