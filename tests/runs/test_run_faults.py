"""Whatever fails after a run took its lock, the client hears RUN_ERROR where it still can, and the
thread is free at once (docs/protocol.md#after-a-crash). Each fault is injected into a real uvicorn subprocess by
tests/support/faulty_app.py."""
from __future__ import annotations

import time

import pytest
import requests

from tests.conftest import Api, wait_for_idle_threads
from tests.runs.conftest import Runs, text_of
from tests.support.live import LiveServer
from tests.support.sse import iter_events

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]

LONG_TEXT = "Please repeat this sentence, which is long enough to be streamed in several parts."


def _faulty_server(name: str, fault: str):
    server = LiveServer(f"fault-{name}", {"TAMBO_TEST_FAULT": fault}, app="tests.support.faulty_app:application")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def encode_server(django_db_setup, django_db_blocker):
    yield from _faulty_server("encode", "encode")


@pytest.fixture(scope="module")
def store_server(django_db_setup, django_db_blocker):
    yield from _faulty_server("store", "store")


@pytest.fixture(scope="module")
def write_server(django_db_setup, django_db_blocker):
    yield from _faulty_server("write", "write")


def _runs(server: LiveServer, api_key: str) -> Runs:
    return Runs(Api(server.url, api_key))


def _read_what_arrives(response: requests.Response) -> list[dict]:
    """The events the client got before the stream ended, cleanly or not."""
    events = []
    try:
        for event in iter_events(response):
            events.append(event)
    except requests.RequestException:
        pass  # the server could not finish the answer: the client keeps what it heard
    return events


def _assert_free_now(runs: Runs, thread_id: str) -> dict:
    """One read, no waiting: the thread is idle, and a new run on it is accepted."""
    thread = runs.thread(thread_id)
    assert thread["runStatus"] == "idle" and "currentRunId" not in thread, thread
    extra = {"previousRunId": thread["lastCompletedRunId"]} if thread.get("lastCompletedRunId") else {}
    response = runs.post(thread_id, "hi", **extra)
    assert response.status_code == 200, response.text
    # The same fault may strike this run too; that it started is what shows the thread was free.
    assert _read_what_arrives(response)[0]["type"] == "RUN_STARTED"
    return thread


def test_a_failure_to_encode_an_event_ends_the_run_with_run_error_and_frees_the_thread(encode_server, api_key):
    runs = _runs(encode_server, api_key)
    response = runs.post_new(LONG_TEXT)
    assert response.status_code == 200
    events = _read_what_arrives(response)

    assert events[0]["type"] == "RUN_STARTED"
    assert [e["type"] for e in events if e["type"] in ("RUN_FINISHED", "RUN_ERROR")] == ["RUN_ERROR"]
    assert events[-1]["code"] == "INTERNAL_ERROR" and "injected" not in events[-1]["message"]
    thread = _assert_free_now(runs, response.headers["X-Thread-Id"])
    assert thread["lastRunError"]["code"] == "INTERNAL_ERROR"
    # The text the client saw before the failure is stored.
    seen = text_of(events)
    assert seen
    stored = [m for m in thread["messages"] if m["role"] == "assistant"]
    assert stored and stored[0]["content"][0]["text"].startswith(seen)
    wait_for_idle_threads()


def test_a_failure_to_store_a_step_ends_the_run_with_run_error_and_keeps_the_text(store_server, api_key):
    runs = _runs(store_server, api_key)
    response = runs.post_new(LONG_TEXT)
    assert response.status_code == 200
    events = _read_what_arrives(response)

    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "INTERNAL_ERROR"
    assert not any(e["type"] == "RUN_FINISHED" for e in events)
    thread = _assert_free_now(runs, response.headers["X-Thread-Id"])
    assert thread["lastRunError"]["code"] == "INTERNAL_ERROR"
    stored = [m for m in thread["messages"] if m["role"] == "assistant"]
    assert stored[0]["content"][0]["text"] == text_of(events)
    wait_for_idle_threads()


def test_a_failure_to_write_to_the_socket_frees_the_thread_and_keeps_the_text(write_server, api_key):
    runs = _runs(write_server, api_key)
    response = runs.post_new("!slow please")
    assert response.status_code == 200
    thread_id = response.headers["X-Thread-Id"]
    events = _read_what_arrives(response)  # the answer breaks off: the client cannot hear a RUN_ERROR

    assert not any(e["type"] in ("RUN_FINISHED", "RUN_ERROR") for e in events)
    deadline = time.monotonic() + 5
    while runs.thread(thread_id)["runStatus"] != "idle":
        assert time.monotonic() < deadline, "the thread was not freed after the write failed"
        time.sleep(0.05)
    thread = _assert_free_now(runs, thread_id)
    assert thread["lastRunCancelled"] is True
    (partial,) = [m for m in thread["messages"] if m["role"] == "assistant"]
    assert partial["isCancelled"] is True and partial["content"][0]["text"].startswith(text_of(events))
    wait_for_idle_threads()
