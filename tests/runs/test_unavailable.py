"""Database errors answer 503 with Retry-After, never 500, and a run whose start failed after taking
its lock frees the thread (docs/protocol.md#design-for-scale and #after-a-crash).

In-process (Django's clients on the real middleware stack) because the failure has to be made on
purpose at one exact point; tests/runs/test_outage.py stops a real PostgreSQL instead.
"""
from __future__ import annotations

import asyncio
import time

import psycopg_pool
import pytest
from asgiref.sync import sync_to_async
from django.db import InterfaceError, OperationalError, connections
from django.test import AsyncClient, Client

from projects.models import ApiKey
from runs import services
from runs.models import Run
from threads import selectors
from threads import services as thread_services
from threads.models import RunStatus, Thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]

RUN_BODY = {"userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}


@pytest.fixture
def key(project) -> str:
    return ApiKey.generate(project, "unavailable")[1]


def _assert_503(response) -> None:
    assert response.status_code == 503, response.content
    assert response["Content-Type"].startswith("application/problem+json")
    assert response.json()["code"] == "SERVICE_UNAVAILABLE"
    assert int(response["Retry-After"]) > 0


@pytest.mark.parametrize("error", [OperationalError("the server closed the connection"),
                                   InterfaceError("connection already closed"),
                                   psycopg_pool.PoolTimeout("couldn't get a connection after 30.00 sec")])
def test_a_database_error_in_a_rest_view_answers_503(key, project, monkeypatch, error):
    thread = thread_services.thread_create(project=project, user_key="alice")

    def unavailable(**kwargs):
        raise error

    monkeypatch.setattr(selectors, "thread_get", unavailable)
    response = Client().get(f"/v1/threads/{thread.id}", {"userKey": "alice"}, headers={"x-api-key": key})
    _assert_503(response)
    assert "closed" not in response.content.decode() and "sec" not in response.content.decode()


def test_a_database_error_before_a_run_streams_answers_503(key, monkeypatch):
    def unavailable(**kwargs):
        raise psycopg_pool.PoolTimeout("couldn't get a connection")

    monkeypatch.setattr(services, "run_start", unavailable)

    async def post():
        response = await AsyncClient().post("/v1/threads/runs", RUN_BODY, content_type="application/json",
                                            headers={"x-api-key": key})
        await sync_to_async(connections.close_all)()
        return response

    _assert_503(asyncio.run(post()))


def test_a_run_whose_history_cannot_be_read_gives_the_lock_back_and_keeps_the_message(key, project, monkeypatch):
    # The history is read after the lock's transaction committed (runs/start_history.py: images would
    # otherwise load under the row lock). Its failure answers 503, records the run as failed and gives
    # the lock back at once; the user's message stays stored, as after any failed run.
    thread = thread_services.thread_create(project=project, user_key="alice")
    # Whichever read the history takes: the whole thread, or its newest messages within the context
    # budget (every project has one: the server's DEFAULT_MAX_INPUT_TOKENS unless it sets its own).
    reads = {name: getattr(selectors, name) for name in ("message_list_all", "message_list_newest")}

    def fails_once(**kwargs):
        for name, real in reads.items():
            monkeypatch.setattr(selectors, name, real)
        raise OperationalError("the server closed the connection")

    for name in reads:
        monkeypatch.setattr(selectors, name, fails_once)

    async def post_then_wait_for_idle():
        response = await AsyncClient().post(f"/v1/threads/{thread.id}/runs", RUN_BODY,
                                            content_type="application/json", headers={"x-api-key": key})
        deadline = time.monotonic() + 5
        while await sync_to_async(lambda: Thread.objects.get(id=thread.id).run_status)() != RunStatus.IDLE:
            assert time.monotonic() < deadline, "the lock taken by the failed start was never released"
            await asyncio.sleep(0.05)
        await sync_to_async(connections.close_all)()
        return response

    _assert_503(asyncio.run(post_then_wait_for_idle()))
    thread.refresh_from_db()
    assert thread.current_run_id is None and thread.run_status == RunStatus.IDLE
    [run] = Run.objects.filter(thread=thread)
    assert run.status == Run.Status.FAILED and run.error_code == "HISTORY_UNREADABLE"
    assert [m.role for m in thread.messages.all()] == ["user"]


def test_a_database_error_in_the_gateway_answers_503_in_openai_shape(key, monkeypatch):
    from gateway import views as gateway_views

    async def unavailable(request):
        raise OperationalError("the server closed the connection")

    monkeypatch.setattr(gateway_views, "_principal", unavailable)

    async def post():
        return await AsyncClient().post("/api/chat/completions", {"messages": [{"role": "user", "content": "hi"}]},
                                        content_type="application/json", headers={"x-api-key": key})

    response = asyncio.run(post())
    assert response.status_code == 503, response.content
    assert response.json()["error"]["code"] == "service_unavailable"
    assert int(response["Retry-After"]) > 0
