"""The run path's hot statements: SQL written once, at import, and executed with parameters through
Django's own cursor (so its connection handling, the pool, the statement wrappers the tests count
with, and SQLite's IMMEDIATE transactions all apply as for the ORM).

Building a queryset, resolving its expressions and compiling it costs the ORM about a millisecond of
Python per statement, more with annotations and subqueries: several times the statement itself on a
short run (docs/performance.md has the profile). The statements here skip that and keep the rest:
rows come back as model instances, through each field's own converters (SQLite's text datetimes
and JSON, PostgreSQL's jsonb), and values go in through each field's own preparation.

Only for a handful of statements run on every request; everything else stays with the ORM. Also the
health checks' `SELECT 1` (`database_ping`, `connection_ping`): hand-written SQL lives in modules named
`statements.py` only (docs/architecture.md#the-contracts).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from django.db import connections
from django.db.models import Field, Model
from django.db.models.expressions import Col


def quote(name: str) -> str:
    # Both backends quote identifiers the SQL standard's way.
    return '"%s"' % name


class Columns:
    """The concrete columns of `model` read under the table alias `alias`: their SQL, and a row's
    values turned into an instance the way the ORM does (`Model.from_db`, the fields' converters)."""

    def __init__(self, model: type[Model], alias: str, fields: Sequence[str] | None = None):
        self.model = model
        concrete = model._meta.concrete_fields
        self.fields: list[Field] = [f for f in concrete if fields is None or f.name in fields]
        self.alias = alias
        self.sql = ", ".join(f"{quote(alias)}.{quote(f.column)}" for f in self.fields)
        self._names = [f.attname for f in self.fields]
        self._cols = [Col(alias, f) for f in self.fields]
        self._converters: dict[str, list[list[Callable]]] = {}

    def __len__(self) -> int:
        return len(self.fields)

    def converters(self, connection) -> list[list[Callable]]:
        cached = self._converters.get(connection.vendor)
        if cached is None:
            cached = self._converters[connection.vendor] = [
                connection.ops.get_db_converters(col) + col.target.get_db_converters(connection)
                for col in self._cols]
        return cached

    def instance(self, values: Sequence[Any], connection) -> Model:
        converted = []
        for value, col, converters in zip(values, self._cols, self.converters(connection)):
            for converter in converters:
                value = converter(value, col, connection)
            converted.append(value)
        return self.model.from_db(connection.alias, self._names, converted)


def prepare(field: Field, value: Any, connection) -> Any:
    """A value for `field`'s column, as the ORM would send it (a datetime as text on SQLite, a
    dict as jsonb on PostgreSQL)."""
    return field.get_db_prep_save(value, connection)


def execute(sql: str, params: Sequence[Any], *, using: str = "default") -> tuple[list[tuple], int]:
    """Runs one statement; returns (the rows it answered, the rows it changed)."""
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall() if cursor.description else []
        return rows, cursor.rowcount


def database_ping(*, using: str = "default") -> None:
    """`SELECT 1` on Django's connection; raises when the database does not answer (`/healthz`)."""
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def connection_ping(conn) -> None:
    """`SELECT 1` on a psycopg connection of the caller's own (core/db_health.py's probe)."""
    conn.execute("SELECT 1")


class Insert:
    """The INSERT of a whole row of `model` (every concrete column), written once. `save(obj)` is
    what `obj.save(force_insert=True)` does for a model with no custom save and no save signals:
    the fields' `pre_save` (defaults, `auto_now`) and preparation, then the statement. A model whose
    primary key is an auto field gets it from the database, and `obj.pk` stays unset (no RETURNING:
    the callers of such inserts, the usage rows, never read it back)."""

    def __init__(self, model: type[Model]):
        self.model = model
        auto = model._meta.pk.get_internal_type().endswith("AutoField")
        self.fields = [f for f in model._meta.concrete_fields if not (auto and f.primary_key)]
        columns = ", ".join(quote(f.column) for f in self.fields)
        values = ", ".join(["%s"] * len(self.fields))
        self.sql = f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({values})"

    def save(self, obj: Model, *, using: str = "default") -> Model:
        connection = connections[using]
        execute(self.sql, [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in self.fields], using=using)
        obj._state.adding, obj._state.db = False, using
        return obj


class Update:
    """The UPDATE of every concrete column of one row of `model`, by primary key, written once.
    `save(obj)` is what `obj.save()` does for a row that exists, for a model with no custom save and
    no save signals: each field's `pre_save` and preparation, then the statement. Returns the rows
    changed (0 when the row is gone, where the ORM would INSERT instead: callers hold the row locked)."""

    def __init__(self, model: type[Model]):
        self.model = model
        self.pk = model._meta.pk
        self.fields = [f for f in model._meta.concrete_fields if not f.primary_key]
        assignments = ", ".join(f"{quote(f.column)} = %s" for f in self.fields)
        self.sql = f"UPDATE {quote(model._meta.db_table)} SET {assignments} WHERE {quote(self.pk.column)} = %s"

    def save(self, obj: Model, *, using: str = "default") -> int:
        connection = connections[using]
        params = [f.get_db_prep_save(f.pre_save(obj, False), connection) for f in self.fields]
        params.append(self.pk.get_db_prep_value(obj.pk, connection))
        _, changed = execute(self.sql, params, using=using)
        return changed
