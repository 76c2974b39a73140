"""Cancelling a run: by DELETE (from this or another server process) and by closing the stream."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

import requests

import pytest

from runs.models import Run
from providers.offline import SLOW_WORDS
from tests.conftest import Api
from tests.runs.conftest import Runs, paused_thread, text_of, tool_result
from tests.support.live import LiveServer
from tests.support.sse import iter_events, types

pytestmark = pytest.mark.django_db(transaction=True)

SLOW_TEXT = "(offline model) A slow answer: " + " ".join(f"word{i}" for i in range(SLOW_WORDS)) + "."
# How many content events the whole slow answer takes (6 characters each): a cancelled run sends fewer.
SLOW_DELTAS = math.ceil(len(SLOW_TEXT) / 6)


@dataclass
class SlowRun:
    response: requests.Response
    stream: Iterator[dict]
    thread_id: str
    run_id: str
    events: list[dict]

    def read_rest(self) -> list[dict]:
        self.events += list(self.stream)
        return self.events


def start_slow(runs: Runs) -> SlowRun:
    """A `!slow` run whose text has started streaming."""
    response = runs.post_new("!slow please")
    assert response.status_code == 200, response.text
    stream = iter_events(response)
    events = []
    for event in stream:
        events.append(event)
        if event["type"] == "TEXT_MESSAGE_CONTENT":
            break
    assert types(events) == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]
    return SlowRun(response, stream, response.headers["X-Thread-Id"], response.headers["X-Run-Id"], events)


def the_only_answer(thread: dict) -> dict:
    (answer,) = [m for m in thread["messages"] if m["role"] == "assistant"]
    return answer


# --- DELETE ----------------------------------------------------------------------------------------

@pytest.mark.both_dbs
def test_a_delete_from_another_connection_stops_the_run_and_keeps_the_partial_message(runs: Runs, api):
    slow = start_slow(runs)
    thread_id, run_id = slow.thread_id, slow.run_id
    other = Api(api.base_url, api.session.headers["x-api-key"])
    cancelled = other.delete(f"/v1/threads/{thread_id}/runs/{run_id}")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json() == {"runId": run_id, "status": "cancelled"}

    events = slow.read_rest()
    assert types(events)[-1] == "RUN_ERROR" and types(events).count("RUN_ERROR") == 1
    assert "RUN_FINISHED" not in types(events)
    error = events[-1]
    assert error["code"] == "CANCELLED" and error["message"]
    assert types(events).count("TEXT_MESSAGE_CONTENT") < SLOW_DELTAS

    thread = runs.wait_idle(thread_id)
    assert thread["lastRunCancelled"] is True and "currentRunId" not in thread
    assert thread["lastCompletedRunId"] == run_id
    assert Run.objects.get(id=run_id).status == Run.Status.CANCELLED
    answer = the_only_answer(thread)
    assert answer["isCancelled"] is True
    assert answer["id"] == events[1]["messageId"]
    # Everything the client saw, and nothing more, is stored.
    assert answer["content"] == [{"type": "text", "text": text_of(events)}]


def test_a_run_after_a_cancelled_one_clears_the_flag(runs: Runs, api):
    slow = start_slow(runs)
    thread_id, run_id = slow.thread_id, slow.run_id
    api.delete(f"/v1/threads/{thread_id}/runs/{run_id}")
    slow.read_rest()
    runs.wait_idle(thread_id)
    after = runs.run(thread_id, "hello", previousRunId=run_id)
    assert types(after)[-1] == "RUN_FINISHED"
    assert "lastRunCancelled" not in runs.thread(thread_id)


def test_deleting_a_run_that_is_not_active_is_404(runs: Runs, api):
    thread_id, events = runs.run_new("hello")
    finished_run = events[0]["runId"]
    response = api.delete(f"/v1/threads/{thread_id}/runs/{finished_run}")
    assert response.status_code == 404 and response.json()["code"] == "RUN_NOT_FOUND"
    response = api.delete(f"/v1/threads/{thread_id}/runs/run_unknown")
    assert response.status_code == 404 and response.json()["code"] == "RUN_NOT_FOUND"
    assert "lastRunCancelled" not in runs.thread(thread_id)


def test_deleting_another_runs_id_while_a_run_streams_is_404(runs: Runs, api):
    slow = start_slow(runs)
    thread_id, run_id = slow.thread_id, slow.run_id
    try:
        wrong = api.delete(f"/v1/threads/{thread_id}/runs/run_unknown")
        assert wrong.status_code == 404 and wrong.json()["code"] == "RUN_NOT_FOUND"
        assert runs.thread(thread_id)["currentRunId"] == run_id
    finally:
        api.delete(f"/v1/threads/{thread_id}/runs/{run_id}")
        slow.response.close()
    runs.wait_idle(thread_id)


def test_another_user_cannot_cancel_a_run(runs: Runs, api):
    slow = start_slow(runs)
    thread_id, run_id = slow.thread_id, slow.run_id
    bob = Api(api.base_url, api.session.headers["x-api-key"], user_key="bob")
    try:
        refused = bob.delete(f"/v1/threads/{thread_id}/runs/{run_id}")
        assert refused.status_code == 404 and refused.json()["code"] == "THREAD_NOT_FOUND"
        # The run goes on.
        assert next(slow.stream)["type"] == "TEXT_MESSAGE_CONTENT"
    finally:
        api.delete(f"/v1/threads/{thread_id}/runs/{run_id}")
        slow.response.close()
    runs.wait_idle(thread_id)


@pytest.mark.both_dbs
def test_a_delete_through_another_server_process_stops_the_run(runs: Runs, api):
    second = LiveServer("offline-second")
    try:
        slow = start_slow(runs)
        thread_id, run_id = slow.thread_id, slow.run_id
        through_second = Api(second.url, api.session.headers["x-api-key"])
        cancelled = through_second.delete(f"/v1/threads/{thread_id}/runs/{run_id}")
        assert cancelled.status_code == 200, cancelled.text
        # The streaming process learns of it from the database, through its watcher.
        events = slow.read_rest()
    finally:
        second.stop()
    assert types(events)[-1] == "RUN_ERROR" and events[-1]["code"] == "CANCELLED"
    assert types(events).count("TEXT_MESSAGE_CONTENT") < SLOW_DELTAS
    thread = runs.wait_idle(thread_id)
    assert thread["lastRunCancelled"] is True
    assert the_only_answer(thread)["isCancelled"] is True


# --- closing the stream ----------------------------------------------------------------------------

@pytest.mark.both_dbs
def test_closing_the_stream_cancels_the_run(runs: Runs):
    slow = start_slow(runs)
    thread_id, run_id = slow.thread_id, slow.run_id
    slow.response.close()
    thread = runs.wait_idle(thread_id)
    assert thread["lastRunCancelled"] is True and thread["lastCompletedRunId"] == run_id
    answer = the_only_answer(thread)
    assert answer["isCancelled"] is True
    stored = answer["content"][0]["text"] if answer["content"] else ""
    assert SLOW_TEXT.startswith(stored) and stored.startswith(text_of(slow.events)) and stored != SLOW_TEXT


@pytest.mark.both_dbs
def test_closing_the_stream_after_awaiting_input_cancels_nothing(runs: Runs):
    response = runs.post_new('get_weather {"city": "Lima"}',
                             tools=[{"name": "get_weather", "description": "Weather.",
                                     "inputSchema": {"type": "object"}}])
    thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
    for event in iter_events(response):
        if event.get("name") == "tambo.run.awaiting_input":
            call_id = event["value"]["pendingToolCalls"][0]["toolCallId"]
            break
    response.close()

    thread = runs.wait_idle(thread_id)
    assert thread["pendingToolCallIds"] == [call_id]
    assert "lastRunCancelled" not in thread and "lastRunError" not in thread
    assert thread["lastCompletedRunId"] == run_id
    assert all("isCancelled" not in m for m in thread["messages"])
    # The client can still answer.
    events = runs.run(thread_id, {"role": "user", "content": [tool_result(call_id, "warm")]}, previousRunId=run_id)
    assert text_of(events) == "Tool get_weather returned: warm"


def test_a_paused_run_cannot_be_cancelled(runs: Runs, api):
    thread_id, run_id, (call_id,) = paused_thread(runs)
    response = api.delete(f"/v1/threads/{thread_id}/runs/{run_id}")
    assert response.status_code == 404 and response.json()["code"] == "RUN_NOT_FOUND"
    assert runs.thread(thread_id)["pendingToolCallIds"] == [call_id]
