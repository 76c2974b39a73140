"""The live thread stream in one process (docs/protocol.md#the-live-thread-stream): the snapshot first,
every later run as it happens, renames and component states, Last-Event-ID, and its refusals.
tests/runs/test_thread_stream_pg.py covers a run started on another process.
"""
from __future__ import annotations

import queue
import socket
import threading
import time

import pytest
import requests

from tests.support.sse import iter_frames

pytestmark = pytest.mark.both_dbs

COMPONENT = {"name": "Card", "description": "a card", "propsSchema": {"type": "object", "properties": {
    "title": {"type": "string"}}}}


class Watcher:
    """A live thread stream read on a thread of its own: its frames wait in a queue for the test."""

    def __init__(self, api, thread_id: str, last_event_id: str | None = None, **params):
        headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
        self.response = api.session.get(f"{api.base_url}/v1/threads/{thread_id}/events", stream=True, timeout=30,
                                        params={"userKey": api.user_key, **params}, headers=headers)
        self.frames: queue.Queue = queue.Queue()
        if self.response.status_code == 200:
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for frame in iter_frames(self.response):
                self.frames.put(frame)
        except (requests.RequestException, AttributeError, ValueError):
            pass
        self.frames.put(None)

    def until(self, done, timeout: float = 20.0) -> list:
        """The frames up to and including the first for which `done(id, event)` holds."""
        got, deadline = [], time.monotonic() + timeout
        while True:
            frame = self.frames.get(timeout=max(deadline - time.monotonic(), 0.01))
            assert frame is not None, f"the stream ended; got {got}"
            got.append(frame)
            if done(*frame):
                return got

    def close(self) -> None:
        # Shut the socket down first: the reading thread is blocked in it, and a plain close would
        # wait for the read's timeout.
        connection = getattr(self.response.raw, "_connection", None) or getattr(self.response.raw, "connection", None)
        sock = getattr(connection, "sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.response.close()


@pytest.fixture
def watchers():
    opened: list[Watcher] = []

    def open_(*args, **kwargs) -> Watcher:
        opened.append(Watcher(*args, **kwargs))
        return opened[-1]

    yield open_
    for watcher in opened:
        watcher.close()


def finished(_, event) -> bool:
    return event["type"] in ("RUN_FINISHED", "RUN_ERROR")


def named(name: str):
    return lambda _, event: event["type"] == "CUSTOM" and event["name"] == name


def test_a_join_begins_with_the_stored_messages_then_the_thread(runs, api, watchers):
    thread_id, _ = runs.run_new("hello")
    stored = api.thread(thread_id)
    watcher = watchers(api, thread_id)
    assert watcher.response.status_code == 200
    assert watcher.response.headers["Content-Type"] == "text/event-stream"
    (_, snapshot), (_, thread) = watcher.until(named("tambo.thread.updated"))
    assert snapshot["type"] == "MESSAGES_SNAPSHOT"
    assert snapshot["messages"] == stored["messages"]
    assert thread["value"]["id"] == thread_id and thread["value"]["runStatus"] == "idle"


def test_a_run_started_after_the_join_streams_with_ids_of_the_run(runs, api, watchers):
    thread_id, first = runs.run_new("hello")
    watcher = watchers(api, thread_id)
    watcher.until(named("tambo.thread.updated"))
    own = runs.run(thread_id, "Tell me more about it.", previousRunId=first[0]["runId"])
    (_, snapshot), *frames = watcher.until(finished)
    run_id = own[0]["runId"]
    # A snapshot holding the run's user message (which its events do not carry), then its events.
    assert snapshot["type"] == "MESSAGES_SNAPSHOT"
    assert snapshot["messages"][-1]["role"] == "user"
    assert snapshot["messages"][-1]["content"] == [{"type": "text", "text": "Tell me more about it."}]
    assert [event for _, event in frames] == own
    assert [seq for seq, _ in frames] == [f"{run_id}:{n}" for n in range(1, len(own) + 1)]
    # And the next one, on the same stream.
    again = runs.run(thread_id, "And then?", previousRunId=run_id)
    assert [event for seq, event in watcher.until(finished) if seq is not None] == again


def test_renames_and_component_states_reach_the_stream(runs, api, watchers):
    thread_id, events = runs.run_new("Show me a Card", availableComponents=[COMPONENT])
    component_id = next(e for e in events if e.get("name") == "tambo.component.start")["value"]["componentId"]
    watcher = watchers(api, thread_id)
    watcher.until(named("tambo.thread.updated"))
    assert api.patch(f"/v1/threads/{thread_id}", {"name": "Cards"}).status_code == 200
    (_, renamed), = watcher.until(named("tambo.thread.updated"))
    assert renamed["value"]["name"] == "Cards"
    set_state = api.post(f"/v1/threads/{thread_id}/components/{component_id}/state",
                         {"userKey": api.user_key, "state": {"open": True}})
    assert set_state.status_code == 200, set_state.text
    (_, state), = watcher.until(named("tambo.component.state"))
    assert state["value"]["componentId"] == component_id and state["value"]["state"] == {"open": True}


def test_joining_during_a_run_shows_it_from_its_start_and_not_twice(runs, api, watchers):
    response = runs.post_new("Tell me everything. " * 100)
    thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
    own = iter_frames(response)
    next(own), next(own)
    watcher = watchers(api, thread_id)
    frames = watcher.until(finished)
    assert frames[0][1]["type"] == "MESSAGES_SNAPSHOT"
    assert [m["role"] for m in frames[0][1]["messages"]] == ["user"]
    run_frames = [(seq, event) for seq, event in frames if seq is not None]
    assert run_frames[0] == (f"{run_id}:1", {**run_frames[0][1], "type": "RUN_STARTED"})
    replay = api.session.get(f"{api.base_url}/v1/threads/{thread_id}/runs/{run_id}/events",
                             params={"userKey": api.user_key}, stream=True, timeout=30)
    assert run_frames == [(f"{run_id}:{seq}", event) for seq, event in iter_frames(replay)]
    response.close()


def test_last_event_id_resumes_the_run_where_it_left_off_with_no_snapshot(runs, api, watchers):
    thread_id, first = runs.run_new("hello")
    watcher = watchers(api, thread_id)
    watcher.until(named("tambo.thread.updated"))
    runs.run(thread_id, "Tell me more about it. " * 5, previousRunId=first[0]["runId"])
    frames = [frame for frame in watcher.until(finished) if frame[0] is not None]
    watcher.close()
    middle = frames[2][0]
    again = watchers(api, thread_id, last_event_id=middle)
    resumed = again.until(finished)
    assert resumed[0][1]["name"] == "tambo.thread.updated"  # no snapshot: the thread, then the rest
    assert resumed[1:] == frames[3:]


def test_it_refuses_another_users_thread_and_an_id_that_is_not_its_own(runs, api, watchers):
    thread_id, _ = runs.run_new("hello")
    other = watchers(api, thread_id, userKey="mallory")
    assert other.response.status_code == 404 and other.response.json()["code"] == "THREAD_NOT_FOUND"
    bad = watchers(api, thread_id, last_event_id="12")
    assert bad.response.status_code == 400 and bad.response.json()["code"] == "VALIDATION_ERROR"
