"""The run path's database calls: bounded threads, connections given back, 503 when the database
cannot serve (core/db.py, docs/protocol.md#design-for-scale)."""
from __future__ import annotations

import asyncio
import contextvars
import json

import pytest
from asgiref.sync import async_to_sync
from django.db import OperationalError, connections
from django.test import AsyncClient

from runs import services
from runs.control import RunControl, Watcher
from core import db

pytestmark = pytest.mark.both_dbs


def test_a_connection_failure_is_database_unavailable():
    def broken():
        raise OperationalError("connection refused")

    with pytest.raises(db.DatabaseUnavailable) as caught:
        async_to_sync(db.db_call)(broken)
    assert caught.value.status == 503 and caught.value.code == "SERVICE_UNAVAILABLE"


def test_a_pooled_connection_goes_back_after_each_call(transactional_db):
    from threads.models import Thread

    connection = connections["default"]
    db.run_sync(Thread.objects.exists)
    pooled = getattr(connection, "pool", None) is not None
    # Pooled: back in the pool after the call. SQLite: the worker keeps its one connection.
    assert (connection.connection is None) is pooled


def test_a_run_start_without_a_database_answers_503_with_retry_after(transactional_db, api_key, monkeypatch):
    def no_database(**kwargs):
        raise OperationalError("the pool timed out")

    monkeypatch.setattr(services, "run_start", no_database)

    async def post():
        body = {"userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}
        return await AsyncClient().post("/v1/threads/runs", json.dumps(body), content_type="application/json",
                                        headers={"x-api-key": api_key})

    response = async_to_sync(post)()
    assert response.status_code == 503
    assert response["Content-Type"].startswith("application/problem+json")
    assert int(response["Retry-After"]) >= 1
    assert response.json()["code"] == "SERVICE_UNAVAILABLE"


def test_the_watcher_does_not_inherit_the_context_of_the_request_that_starts_it(monkeypatch):
    request_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_var", default="clean")
    monkeypatch.setattr("django.conf.settings.RUN_WATCH_INTERVAL", 0.0)
    seen = []

    async def fake_db_call(fn, *args):
        seen.append(request_var.get())
        return [], True, []  # _tick_in_db's (flagged, written, taken over)

    monkeypatch.setattr("runs.control.db_call", fake_db_call)

    async def main():
        watcher = Watcher()
        control = RunControl("run_x")
        request_var.set("request-1")
        watcher.register(control)
        while not seen:
            await asyncio.sleep(0.01)
        watcher.unregister(control)
        # The watcher serves the process for as long as it lives (it also sweeps expired leases).
        watcher._task.cancel()

    asyncio.run(main())
    assert set(seen) == {"clean"}
