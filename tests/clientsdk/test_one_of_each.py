"""One of each thing across the server and the client (issue 12): the wire models both import, the
request bodies the client builds from them, one Retry-After parser, one SSE decoder, one error tree."""
from __future__ import annotations

import email.utils
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

import clientsdk._base as base
from clientsdk import APIConnectionError, APIError, APIStatusError, Client, Stream, TamboError, wire
from clientsdk.message import (
    AbortError,
    ChatCompletionsConnectionError,
    ChatCompletionsError,
    ChatCompletionsHTTPError,
    ChatCompletionsStreamError,
    sse_stream_to_generator,
)
from clientsdk.retry_after import retry_after_seconds

from .scripted_server import THREAD, Reply

ROOT = Path(__file__).resolve().parents[2]


def test_the_server_imports_the_shared_modules_without_the_clients_http_layer():
    script = (
        "import sys\n"
        "from clientsdk import wire, partial_json, retry_after\n"
        "loaded = {'requests', 'sseclient', 'urllib3', 'clientsdk.tool_loop', 'clientsdk.client', 'django'}\n"
        "leaked = sorted(loaded & set(sys.modules))\n"
        "assert not leaked, leaked\n"
        "print('ISOLATED')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ISOLATED"


def test_the_server_and_the_client_share_the_same_wire_models():
    import runs.openapi
    import threads.presenters

    assert threads.presenters.wire is wire and runs.openapi.wire is wire


def test_a_run_body_the_client_builds_is_one_the_server_parses_back_unchanged():
    client = Client("http://127.0.0.1:9", "k", "alice")
    client.register_tool("echo", lambda text: text, "Echo", {"type": "object"})
    client.register_component("Card", "A card", {"type": "object"}, state_schema={"type": "object"})
    body = client.build_run_body({"role": "user", "content": [{"type": "text", "text": "hi"}]},
                                 previous_run_id="run_1", new_thread=True, tool_choice={"name": "echo"},
                                 max_tokens=50, thread_metadata={"t": 1})
    parsed = wire.CreateThreadWithRunBody.model_validate(json.loads(json.dumps(body)))
    assert parsed.wire() == body
    assert body["thread"] == {"userKey": "alice"} and body["toolChoice"] == {"name": "echo"}
    assert body["availableComponents"] == [{"name": "Card", "description": "A card", "propsSchema": {"type": "object"},
                                            "stateSchema": {"type": "object"}}]


def test_a_body_the_server_would_refuse_is_refused_before_it_is_sent(server):
    client = Client(server.url, "k", "alice", max_retries=0)
    with pytest.raises(ValidationError):
        client.runs.create([])  # a message needs at least one content block
    with pytest.raises(ValidationError):
        client.threads.create(initial_messages=[{"role": "robot", "content": [{"type": "text", "text": "x"}]}])
    client.register_tool("", lambda: None, "No name", {"type": "object"})  # any other name is valid
    with pytest.raises(ValidationError):
        client.run("hi").result()
    assert server.requests == []


@pytest.mark.parametrize(("headers", "seconds"), [
    ({"retry-after": "3"}, 3.0),
    ({"retry-after": "0.5"}, 0.5),
    ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
    ({"retry-after": "-4"}, 0.0),
    ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # a date in the past: now
    ({"retry-after": "soon"}, None),
    ({"retry-after": ""}, None),
    ({"retry-after": "inf"}, None),
    ({"retry-after-ms": "later"}, None),
    ({}, None),
])
def test_retry_after_is_seconds_or_an_http_date_and_anything_else_is_ignored(headers, seconds):
    assert retry_after_seconds(headers) == seconds


def test_retry_after_as_an_http_date_in_the_future():
    soon = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < retry_after_seconds({"retry-after": soon}) <= 30
    # "-0000" means GMT too, though Python parses it without a zone.
    soon_naive = soon.replace("GMT", "-0000")
    assert 25 < retry_after_seconds({"retry-after": soon_naive}) <= 30


def test_the_client_retries_past_an_unreadable_retry_after(server, monkeypatch):
    # The client's own parser used to raise ValueError here, out of the retry loop.
    monkeypatch.setattr(base, "INITIAL_RETRY_DELAY", 0.01)
    server.add("GET", "/v1/threads", Reply.problem(503, "INTERNAL_ERROR", **{"Retry-After": "soon"}),
               Reply.json(200, {"threads": [THREAD], "hasMore": False}))
    page = Client(server.url, "k", "alice", max_retries=1).threads.list()
    assert [t.id for t in page.threads] == ["thr_1"]
    assert len(server.calls("GET", "/v1/threads")) == 2


BAD_UTF8 = b'data: {"type":"RUN_STARTED","threadId":"t\xff","runId":"r"}\r\rdata: {"type":"RUN_FINISHED",'


def test_both_streams_read_through_the_one_decoder():
    # Invalid UTF-8 becomes U+FFFD, CR alone ends lines, and a last event cut off without its blank
    # line is still read: the same for the v1 run stream and the message engine's stream.
    events = list(Stream(None, chunks=[BAD_UTF8, b'"threadId":"t","runId":"r"}']))
    assert [(e.type, e.thread_id) for e in events] == [("RUN_STARTED", "t\ufffd"), ("RUN_FINISHED", "t")]
    chunks = list(sse_stream_to_generator(iter([BAD_UTF8, b'"threadId":"t","runId":"r"}'])))
    assert [c["threadId"] for c in chunks] == ["t\ufffd", "t"]


def test_the_message_engines_errors_are_part_of_the_clients_error_tree():
    assert issubclass(ChatCompletionsError, APIError)
    assert issubclass(ChatCompletionsHTTPError, APIStatusError)
    assert issubclass(ChatCompletionsConnectionError, APIConnectionError)
    assert issubclass(ChatCompletionsStreamError, ChatCompletionsError)
    assert issubclass(AbortError, TamboError)
    error = ChatCompletionsStreamError("vendor failed", body={"error": {"message": "x", "code": "upstream_error"}})
    assert error.code == "upstream_error" and error.body["error"]["message"] == "x"


def test_a_lost_gateway_is_the_clients_connection_error():
    from clientsdk.message import ChatCompletionsProvider

    with pytest.raises(APIConnectionError) as caught:
        list(ChatCompletionsProvider("http://127.0.0.1:9", "k", timeout=5)({"messages": []}))
    assert isinstance(caught.value, ChatCompletionsConnectionError)
