"""The API key lookup, the first statement of every request made with a project key: the unrevoked
key with a given hash and its project, in one statement written once (core/statements.py).

There is no cache: a key revoked in the admin is refused at its very next request.
"""
from __future__ import annotations

from typing import Any, Callable

from django.db import connections

from core.statements import Columns, execute, quote
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
