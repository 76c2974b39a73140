"""Empties the test database after a transactional test with DELETE instead of Django's flush.

Why: Django's `TransactionTestCase` ends every test with `manage.py flush`, a `TRUNCATE` of every table
followed by the `post_migrate` signal, which recreates the content types and permissions the TRUNCATE
has just removed. On PostgreSQL a TRUNCATE makes new files for every table, index and TOAST table:
measured on this schema, 186–436 ms per flush (`call_command("flush")` 309–336 ms), against 3–6 ms for
one transaction of `DELETE FROM` each table. Nearly every test here is transactional (the server under
test runs in another process and must see the test's rows), so the flush was about half of the suite's
time (docs/testing.md).

What stays the same: every table Django's flush empties is emptied, in one transaction (the foreign keys
Django creates are deferrable on both PostgreSQL and SQLite, so the order does not matter), and sequences
are not reset (the flush does not reset them either). What differs: the content types and permissions
are kept instead of being deleted and made again with new ids, which no test may rely on.
"""
from __future__ import annotations

from django.db import connections, transaction
from django.test import TransactionTestCase

# Rows that `post_migrate` would write back identically after a flush.
KEPT_TABLES = frozenset({"django_content_type", "auth_permission"})


def delete_all_rows(db_name: str) -> None:
    connection = connections[db_name]
    tables = [t for t in connection.introspection.django_table_names(only_existing=True, include_views=False)
              if t not in KEPT_TABLES]
    quote = connection.ops.quote_name
    with transaction.atomic(using=db_name), connection.cursor() as cursor:
        for table in sorted(tables):
            cursor.execute(f"DELETE FROM {quote(table)}")


def _fixture_teardown(self: TransactionTestCase) -> None:
    # A test that names its apps (available_apps) or restores serialized data keeps Django's own flush.
    if self.available_apps is not None or self.serialized_rollback:
        return _django_fixture_teardown(self)
    for db_name in self._databases_names(include_mirrors=False):
        delete_all_rows(db_name)


_django_fixture_teardown = TransactionTestCase._fixture_teardown


def install() -> None:
    TransactionTestCase._fixture_teardown = _fixture_teardown
