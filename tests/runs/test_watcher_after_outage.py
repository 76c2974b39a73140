"""The run watcher after a database outage (PostgreSQL only: closing SQLite's in-memory test
database's only connection would drop the database itself)."""
from __future__ import annotations

import pytest
from django.db import DatabaseError, connection

from projects.models import Project
from runs.control import _cancels_poll
from runs.lock import lock_held, lock_request_cancel
from runs.models import Run
from threads import services

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_watcher_sees_cancels_again_once_the_database_is_back():
    project = Project.objects.create(name="watcher-outage")
    thread = services.thread_create(project=project, user_key="alice")
    with lock_held(thread_id=thread.id, run_id="run_w") as t:
        Run.objects.create(id="run_w", thread=t)
    assert lock_request_cancel(thread_id=thread.id, run_id="run_w")
    # The server drops the watcher thread's connection (a restart, a failover …).
    connection.ensure_connection()
    connection.connection.close()
    with pytest.raises(DatabaseError):
        _cancels_poll(["run_w"])

    assert _cancels_poll(["run_w"]) == ["run_w"]
