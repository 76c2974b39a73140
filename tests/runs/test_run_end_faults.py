"""A run whose end cannot be recorded at once still ends its stream and frees its thread: the
database failing while the loop records the failure, and the client leaving while the lock is taken.

These run in-process (Django's AsyncClient on the ASGI stack) because they need to make a service
fail on purpose, which a separate server process cannot be told to do.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time

import pytest
from asgiref.sync import sync_to_async
from django.db import OperationalError, connections
from django.test import AsyncClient

from projects.models import ApiKey
from runs import services
from tests.support.sse import decode_events
from threads import services as thread_services
from threads.models import RunStatus, Thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]


def _events(chunks: list[bytes]) -> list[dict]:
    return list(decode_events(chunks))


async def _stream_new_run(key: str, text: str) -> tuple[str, list[dict]]:
    client = AsyncClient()
    response = await client.post("/v1/threads/runs", {"userKey": "alice", "message": {
        "role": "user", "content": [{"type": "text", "text": text}]}},
        content_type="application/json", headers={"x-api-key": key})
    assert response.status_code == 200, response.content
    chunks = [chunk async for chunk in response.streaming_content]
    # The ORM ran on asgiref's shared thread: close its connection so the test database can be dropped.
    await sync_to_async(connections.close_all)()
    return response["X-Thread-Id"], _events(chunks)


def test_it_ends_the_stream_with_run_error_and_frees_the_thread_when_recording_the_failure_fails_once(
        project, monkeypatch):
    _, key = ApiKey.generate(project, "review")
    real_run_failed = services.run_fail
    failures = {"run_fail": 0}

    def database_down(**kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    def run_failed_after_a_blip(**kwargs):
        # The database is still away the first time the loop tries to record the failure.
        if failures["run_fail"] == 0:
            failures["run_fail"] += 1
            raise OperationalError("server closed the connection unexpectedly")
        return real_run_failed(**kwargs)

    # Every step is stored through step_store: a run's last one in the same transaction as its end.
    monkeypatch.setattr(services, "step_store", database_down)
    monkeypatch.setattr(services, "run_fail", run_failed_after_a_blip)

    thread_id, events = asyncio.run(_stream_new_run(key, "hello"))

    assert events[0]["type"] == "RUN_STARTED"
    ends = [e for e in events if e["type"] in ("RUN_FINISHED", "RUN_ERROR")]
    assert ends == [events[-1]]
    # A database that went away is a passing condition the client may retry (docs/protocol.md#after-a-crash).
    assert events[-1]["code"] == "SERVICE_UNAVAILABLE"
    assert events[-1]["category"] == "server_error" and events[-1]["isRetryable"] is True
    assert "closed the connection" not in json.dumps(events)
    thread = Thread.objects.get(pk=thread_id)
    assert thread.run_status == RunStatus.IDLE
    assert thread.last_run_error["code"] == "SERVICE_UNAVAILABLE"


def test_a_client_that_leaves_while_the_lock_is_being_taken_leaves_an_idle_cancelled_thread(project, monkeypatch):
    _, key = ApiKey.generate(project, "review")
    thread = thread_services.thread_create(project=project, user_key="alice")
    lock_taken, go_on = threading.Event(), threading.Event()
    real_run_start = services.run_start

    def run_start_then_wait(**kwargs):
        started = real_run_start(**kwargs)
        lock_taken.set()
        go_on.wait(10)
        return started

    monkeypatch.setattr(services, "run_start", run_start_then_wait)

    async def leave_early() -> Thread:
        request = asyncio.ensure_future(AsyncClient().post(
            f"/v1/threads/{thread.id}/runs", {"userKey": "alice", "message": {
                "role": "user", "content": [{"type": "text", "text": "hello"}]}},
            content_type="application/json", headers={"x-api-key": key}))
        assert await asyncio.to_thread(lock_taken.wait, 10)
        request.cancel()  # what Django's ASGI handler does when the client disconnects
        go_on.set()
        with contextlib.suppress(asyncio.CancelledError):
            await request
        deadline = time.monotonic() + 10
        while True:
            row = await sync_to_async(Thread.objects.get)(pk=thread.id)
            if row.run_status == RunStatus.IDLE or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.02)
        await sync_to_async(connections.close_all)()
        return row

    row = asyncio.run(leave_early())

    assert row.run_status == RunStatus.IDLE, "the run lock was left to its lease"
    assert row.last_run_cancelled is True
