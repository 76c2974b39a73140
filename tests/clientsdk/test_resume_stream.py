"""Resuming a run's stream against a scripted server: the request on the wire (onDisconnect,
Last-Event-ID), events delivered once across a reconnect, and when the client gives up."""
from __future__ import annotations

import json

import pytest
from ag_ui.core import EventType

from clientsdk import APIConnectionError, Client, InternalServerError, NotFoundError

from .scripted_server import Reply, ScriptedServer

THREAD, RUN = "thr_1", "run_1"
EVENTS = [
    {"type": "RUN_STARTED", "threadId": THREAD, "runId": RUN},
    {"type": "TEXT_MESSAGE_START", "messageId": "msg_1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg_1", "delta": "one "},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg_1", "delta": "two "},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg_1", "delta": "three"},
    {"type": "TEXT_MESSAGE_END", "messageId": "msg_1"},
    {"type": "RUN_FINISHED", "threadId": THREAD, "runId": RUN},
]
HEADERS = {"X-Thread-Id": THREAD, "X-Run-Id": RUN}
EVENTS_PATH = f"/v1/threads/{THREAD}/runs/{RUN}/events"


def wire(first: int, last: int, *, ids: bool = True) -> list[bytes]:
    """Events first..last (1-based ids, as the server numbers them) as SSE chunks."""
    return [(f"id: {n}\n" if ids else "").encode() + f"data: {json.dumps(EVENTS[n - 1])}\n\n".encode()
            for n in range(first, last + 1)]


def sse(chunks: list[bytes]) -> Reply:
    return Reply(200, {"Content-Type": "text/event-stream", **HEADERS}, chunks=chunks)


@pytest.fixture
def server():
    with ScriptedServer() as s:
        yield s


@pytest.fixture
def client(server):
    with Client(server.url, "tk_test", "alice", timeout=10) as c:
        yield c


def texts(pairs):
    return "".join(e.delta for e, _ in pairs if e.type == EventType.TEXT_MESSAGE_CONTENT)


def test_a_stream_that_ends_early_is_read_on_after_its_last_id_and_each_event_comes_once(server, client):
    # The first answer stops after event 3 (half of event 4 on the wire); the events route then
    # repeats event 3 before the rest, as a replay after a reconnect may.
    server.add("POST", "/v1/threads/runs", sse(wire(1, 3) + [wire(4, 4)[0][:20]]))
    server.add("GET", EVENTS_PATH, sse(wire(3, 7)))
    stream = client.run("hi", resume=True)
    pairs = list(stream)
    assert [e.type for e, _ in pairs] == [EventType(e["type"]) for e in EVENTS]
    assert texts(pairs) == "one two three" and stream.snapshot.status == "finished"
    assert stream.last_event_id == "7"
    [post] = server.calls("POST", "/v1/threads/runs")
    assert post.body["onDisconnect"] == "continue"
    [get] = server.calls("GET", EVENTS_PATH)
    assert get.headers["Last-Event-ID"] == "3" and get.query["userKey"] == ["alice"]


def test_reconnecting_is_retried_on_a_server_error_then_succeeds(server, client):
    server.add("POST", "/v1/threads/runs", sse(wire(1, 2)))
    server.add("GET", EVENTS_PATH, Reply.problem(503, "UNAVAILABLE"), sse(wire(3, 7)))
    assert texts(client.run("hi", resume=True)) == "one two three"
    assert [g.headers["Last-Event-ID"] for g in server.calls("GET", EVENTS_PATH)] == ["2", "2"]


def test_the_client_gives_up_after_its_attempts(server, client):
    server.add("POST", "/v1/threads/runs", sse(wire(1, 2)))
    server.add("GET", EVENTS_PATH, Reply.problem(503, "UNAVAILABLE"))
    stream = client.run("hi", resume=True, resume_attempts=1)
    with pytest.raises(InternalServerError):
        list(stream)
    assert len(server.calls("GET", EVENTS_PATH)) == 1


def test_a_run_the_server_forgot_is_not_retried(server, client):
    server.add("POST", "/v1/threads/runs", sse(wire(1, 2)))
    server.add("GET", EVENTS_PATH, Reply.problem(404, "RUN_NOT_FOUND"))
    with pytest.raises(NotFoundError):
        list(client.run("hi", resume=True))
    assert len(server.calls("GET", EVENTS_PATH)) == 1


def test_a_stream_without_ids_cannot_be_resumed_once_events_came(server, client):
    server.add("POST", "/v1/threads/runs", sse(wire(1, 2, ids=False)))
    with pytest.raises(APIConnectionError, match="ended before the run finished"):
        list(client.run("hi", resume=True))
    assert server.calls("GET", EVENTS_PATH) == []


def test_without_resume_the_body_has_no_on_disconnect_and_an_early_end_is_an_error(server, client):
    server.add("POST", "/v1/threads/runs", sse(wire(1, 2)))
    with pytest.raises(APIConnectionError):
        list(client.run("hi"))
    assert "onDisconnect" not in server.calls("POST", "/v1/threads/runs")[0].body
    assert server.calls("GET", EVENTS_PATH) == []


def test_on_disconnect_passes_through_and_contradicting_resume_is_refused(server, client):
    server.add("POST", "/v1/threads/runs", sse(wire(1, 7)))
    client.run("hi", on_disconnect="continue").result()
    client.runs.create("hi", on_disconnect="cancel").close()
    assert [c.body["onDisconnect"] for c in server.calls("POST", "/v1/threads/runs")] == ["continue", "cancel"]
    with pytest.raises(ValueError):
        client.run("hi", resume=True, on_disconnect="cancel")


def test_join_reads_the_events_route_after_the_given_id(server, client):
    server.add("GET", EVENTS_PATH, sse(wire(5, 7)))
    stream = client.join(THREAD, RUN, after=4)
    assert [e.type for e, _ in stream] == [EventType.TEXT_MESSAGE_CONTENT, EventType.TEXT_MESSAGE_END,
                                           EventType.RUN_FINISHED]
    assert server.calls("GET", EVENTS_PATH)[0].headers["Last-Event-ID"] == "4"
    assert (stream.thread_id, stream.run_id) == (THREAD, RUN)
