"""Bugs found in a review of the run path, each pinned by the test that showed it.

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
from django.test import AsyncClient, Client

from projects.models import ApiKey
from runs import services
from runs.control import RunControl, Watcher
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

    monkeypatch.setattr(services, "step_persist", database_down)
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


def test_the_watcher_starts_again_on_a_new_event_loop_when_the_old_loop_closed_under_it(settings, monkeypatch):
    settings.RUN_WATCH_INTERVAL = 0.01
    watcher = Watcher()
    polled: list[list[str]] = []

    def renew_and_poll(run_ids: list[str]) -> list[str]:
        polled.append(list(run_ids))
        return list(run_ids)  # every run it holds was flagged for cancel elsewhere

    monkeypatch.setattr("runs.control._renew_and_poll", renew_and_poll)

    # A loop that closes without cancelling its tasks leaves the watcher's task pending forever.
    old_loop = asyncio.new_event_loop()
    stale = RunControl("run_stale")
    stale.settled = True  # nothing to poll: the old task just sleeps

    async def register_stale() -> None:
        watcher.register(stale)

    old_loop.run_until_complete(register_stale())
    old_loop.close()
    watcher.unregister(stale)

    control = RunControl("run_new")

    async def register_and_wait() -> bool:
        watcher.register(control)
        deadline = time.monotonic() + 10
        while not control.cancelled and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        watcher.unregister(control)
        return control.cancelled

    assert asyncio.run(register_and_wait()), "no watcher ran on the new loop"
    assert ["run_new"] in polled


def test_a_405_under_v1_names_the_allowed_methods(api_key):
    response = Client().get("/v1/threads/thr_x/runs", headers={"x-api-key": api_key})

    assert response.status_code == 405
    assert response["Content-Type"].startswith("application/problem+json")
    assert response.json()["code"] == "METHOD_NOT_ALLOWED"
    assert response["Allow"] == "POST"


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
