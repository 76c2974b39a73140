"""The client's HTTP behaviour against a scripted local server: errors, retries, wire placement."""
from __future__ import annotations

import socket
import time

import pytest

import clientsdk._base as base
from clientsdk import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    Client,
    ConflictError,
    InternalServerError,
    NotFoundError,
    RateLimitError,
)

from .scripted_server import THREAD, Reply, ScriptedServer


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    monkeypatch.setattr(base, "INITIAL_RETRY_DELAY", 0.01)


def client_for(server: ScriptedServer, **kw) -> Client:
    return Client(server.url, "key_123", "alice", **kw)


@pytest.mark.parametrize("status, code, cls", [
    (400, "VALIDATION_ERROR", BadRequestError),
    (401, "UNAUTHORIZED", AuthenticationError),
    (404, "THREAD_NOT_FOUND", NotFoundError),
    (409, "RUN_ACTIVE", ConflictError),
    (413, "PAYLOAD_TOO_LARGE", APIStatusError),
    (429, "RATE_LIMITED", RateLimitError),
    (500, "INTERNAL_ERROR", InternalServerError),
    (503, "INTERNAL_ERROR", InternalServerError),
])
def test_each_status_raises_its_error_class_with_the_problem_code(server, status, code, cls):
    server.add("GET", "/v1/threads/thr_1", Reply.problem(status, code, detail="nope"))
    with pytest.raises(cls) as info:
        client_for(server, max_retries=0).threads.retrieve("thr_1")
    err = info.value
    assert type(err) is cls
    assert (err.status_code, err.code, err.message) == (status, code, "nope")
    assert err.problem["type"] == f"urn:tambo:error:{code.lower()}"


def test_an_error_without_a_problem_body_still_has_a_reason(server):
    server.add("GET", "/v1/threads", Reply(502, {"Content-Type": "text/plain"}, b"bad gateway"))
    with pytest.raises(InternalServerError) as info:
        client_for(server, max_retries=0).threads.list()
    assert info.value.code is None and info.value.message == "bad gateway"


def test_it_retries_a_503_then_succeeds(server):
    server.add("GET", "/v1/threads/thr_1", Reply.problem(503, "INTERNAL_ERROR"), Reply.problem(503, "INTERNAL_ERROR"),
               Reply.json(200, {**THREAD, "messages": []}))
    thread = client_for(server).threads.retrieve("thr_1")
    assert thread.id == "thr_1"
    assert len(server.calls("GET", "/v1/threads/thr_1")) == 3


def test_it_honours_retry_after_on_429(server):
    server.add("GET", "/v1/threads", Reply.problem(429, "RATE_LIMITED", **{"Retry-After": "1"}),
               Reply.json(200, {"threads": [THREAD], "hasMore": False}))
    started = time.monotonic()
    page = client_for(server).threads.list()
    elapsed = time.monotonic() - started
    assert [t.id for t in page.threads] == ["thr_1"] and page.has_more is False
    assert 0.95 <= elapsed < 5


def test_it_gives_up_after_max_retries(server):
    server.add("DELETE", "/v1/threads/thr_1", Reply.problem(503, "INTERNAL_ERROR"))
    with pytest.raises(InternalServerError):
        client_for(server, max_retries=2).threads.delete("thr_1")
    assert len(server.calls("DELETE", "/v1/threads/thr_1")) == 3


def test_it_does_not_retry_a_client_error(server):
    server.add("GET", "/v1/threads", Reply.problem(400, "INVALID_CURSOR"))
    with pytest.raises(BadRequestError) as info:
        client_for(server, max_retries=2).threads.list(cursor="bad")
    assert info.value.code == "INVALID_CURSOR"
    assert len(server.calls("GET", "/v1/threads")) == 1


def test_it_never_retries_starting_a_run(server):
    server.add("POST", "/v1/threads/runs", Reply.problem(503, "INTERNAL_ERROR"))
    with pytest.raises(InternalServerError):
        client_for(server, max_retries=2).runs.create("hi")
    assert len(server.calls("POST", "/v1/threads/runs")) == 1


def test_a_refused_connection_is_a_connection_error_after_retries():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = Client(f"http://127.0.0.1:{port}", "k", "alice", max_retries=1)
    with pytest.raises(APIConnectionError) as info:
        client.threads.list()
    assert not isinstance(info.value, APITimeoutError)


def test_a_slow_answer_is_a_timeout(server):
    server.add("GET", "/v1/threads", Reply(200, {}, b"{}", delay=1.5))
    with pytest.raises(APITimeoutError):
        client_for(server, timeout=0.3, max_retries=0).threads.list()


def test_a_timeout_is_retried(server):
    server.add("GET", "/v1/threads", Reply(200, {}, b"{}", delay=1.0),
               Reply.json(200, {"threads": [], "hasMore": False}))
    assert client_for(server, timeout=0.4, max_retries=1).threads.list().threads == []


def test_user_key_is_a_query_parameter_on_get_and_delete_and_a_body_field_on_post(server):
    server.add("GET", "/v1/threads", Reply.json(200, {"threads": [], "hasMore": False}))
    server.add("POST", "/v1/threads", Reply.json(201, THREAD))
    server.add("DELETE", "/v1/threads/thr_1/runs/run_1", Reply.json(200, {"runId": "run_1", "status": "cancelled"}))
    server.add("POST", "/v1/threads/thr_1/components/comp_1/state", Reply.json(200, {"state": {"a": 1}}))
    server.add("PATCH", "/v1/threads/thr_1", Reply.json(200, {**THREAD, "name": "N"}))
    client = client_for(server)
    client.threads.list(limit=5)
    client.threads.create(metadata={"k": "v"})
    assert client.runs.cancel("thr_1", "run_1").status == "cancelled"
    assert client.components.update_state("thr_1", "comp_1", patch=[{"op": "add", "path": "/a", "value": 1}]).state == {"a": 1}
    assert client.threads.update("thr_1", name="N").name == "N"
    get, post, delete, state, patch = server.requests
    assert get.query == {"userKey": ["alice"], "limit": ["5"]} and get.headers["x-api-key"] == "key_123"
    assert post.body == {"userKey": "alice", "metadata": {"k": "v"}} and post.query == {}
    assert delete.query == {"userKey": ["alice"]}
    assert state.body == {"userKey": "alice", "patch": [{"op": "add", "path": "/a", "value": 1}]}
    assert patch.query == {"userKey": ["alice"]} and patch.body["name"] == "N"


def test_update_state_wants_exactly_one_of_state_and_patch(server):
    client = client_for(server)
    with pytest.raises(ValueError):
        client.components.update_state("thr_1", "comp_1")
    with pytest.raises(ValueError):
        client.components.update_state("thr_1", "comp_1", state={}, patch=[])


def test_thread_history_is_listed_and_retrieved_as_typed_models(server):
    msg = {"id": "msg_1", "role": "assistant", "createdAt": "2025-01-01T00:00:00Z",
           "content": [{"type": "text", "text": "hi"}, {"type": "tool_use", "id": "call_1", "name": "t", "input": {}}]}
    server.add("GET", "/v1/threads/thr_1/messages", Reply.json(200, {"messages": [msg], "hasMore": True, "nextCursor": "c2"}))
    server.add("GET", "/v1/threads/thr_1/messages/msg_1", Reply.json(200, msg))
    client = client_for(server)
    page = client.threads.messages.list("thr_1", order="desc", limit=1)
    assert page.has_more and page.next_cursor == "c2" and page.messages[0].content[1].name == "t"
    assert client.threads.messages.retrieve("thr_1", "msg_1").content[0].text == "hi"
    assert server.requests[0].query == {"userKey": ["alice"], "order": ["desc"], "limit": ["1"]}


def test_starting_a_run_on_a_new_thread_sends_the_user_key_in_thread_and_top_level(server):
    server.add("POST", "/v1/threads/runs", Reply.sse(
        [{"type": "RUN_STARTED", "threadId": "thr_9", "runId": "run_9"},
         {"type": "RUN_FINISHED", "threadId": "thr_9", "runId": "run_9"}],
        headers={"X-Thread-Id": "thr_9", "X-Run-Id": "run_9"}))
    with client_for(server).runs.create("hello", tool_choice="auto") as stream:
        assert (stream.thread_id, stream.run_id) == ("thr_9", "run_9")
        assert len(list(stream)) == 2
    body = server.requests[0].body
    assert body["thread"] == {"userKey": "alice"} and body["userKey"] == "alice"
    assert body["message"] == {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    assert body["toolChoice"] == "auto"
