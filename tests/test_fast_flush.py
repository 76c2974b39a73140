"""The transactional tests' cleanup (tests/support/fast_flush.py) empties what Django's flush empties."""
from __future__ import annotations

import pytest
from django.db import connection

from tests.support import fast_flush

pytestmark = pytest.mark.both_dbs


def _counts() -> dict[str, int]:
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    with connection.cursor() as cursor:
        counts = {}
        for table in tables:
            cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)}")
            counts[table] = cursor.fetchone()[0]
    return counts


def test_it_empties_every_table_but_the_content_types_and_permissions(transactional_db, django_user_model):
    from projects.models import ApiKey, Project
    from threads.models import Thread

    project = Project.objects.create(name="flushed")
    ApiKey.generate(project, "k")
    Thread.objects.create(project=project, user_key="u")
    django_user_model.objects.create_user("someone", password="pw")
    before = _counts()
    assert before["projects_project"] == 1 and before["auth_user"] == 1

    fast_flush.delete_all_rows("default")

    after = _counts()
    left = {t: n for t, n in after.items() if n and t not in fast_flush.KEPT_TABLES}
    assert left == {}
    # The kept rows are the ones post_migrate would write again after Django's flush.
    assert after["django_content_type"] == before["django_content_type"] > 0
    assert after["auth_permission"] == before["auth_permission"] > 0


def test_it_is_what_ends_a_transactional_test():
    from django.test import TransactionTestCase

    assert TransactionTestCase._fixture_teardown is fast_flush._fixture_teardown
