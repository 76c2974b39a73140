"""The SSE layer and the typed event stream: framing edge cases, parsing, closing the response."""
from __future__ import annotations

import json
import threading
import time

import pytest
import requests
from ag_ui.core import CustomEvent, EventType, RunErrorEvent

from clientsdk import APIConnectionError, APIResponseValidationError, Stream
from clientsdk._sse import iter_sse_data

from .scripted_server import Reply, ScriptedServer

EVENTS = [
    {"type": "RUN_STARTED", "threadId": "thr_1", "runId": "run_1", "timestamp": 1},
    {"type": "TEXT_MESSAGE_START", "messageId": "msg_1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg_1", "delta": "héllo ✓ \n\n data: not an event"},
    {"type": "CUSTOM", "name": "tambo.run.awaiting_input", "value": {"pendingToolCalls": []}},
    {"type": "RUN_ERROR", "message": "boom", "code": "LLM_SERVER_ERROR", "category": "server_error",
     "isRetryable": True},
]
WIRE = b"".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n".encode() for e in EVENTS)


def test_events_split_across_chunks_at_every_byte_are_reassembled():
    # One byte per network chunk splits every field, every line end and every UTF-8 sequence.
    data = list(iter_sse_data(WIRE[i:i + 1] for i in range(len(WIRE))))
    assert [json.loads(d) for d in data] == EVENTS


@pytest.mark.parametrize("size", [2, 7, 64, 1000])
def test_events_split_into_chunks_of_any_size_are_reassembled(size):
    data = list(iter_sse_data(WIRE[i:i + size] for i in range(0, len(WIRE), size)))
    assert [json.loads(d) for d in data] == EVENTS


def test_multi_line_data_is_joined_with_newlines():
    wire = b'data: {"type": "RUN_STARTED",\ndata:  "threadId": "t",\ndata: "runId": "r"}\n\n'
    [data] = iter_sse_data([wire])
    assert data == '{"type": "RUN_STARTED",\n "threadId": "t",\n"runId": "r"}'
    [event] = Stream(None, chunks=[wire])
    assert (event.type, event.thread_id, event.run_id) == (EventType.RUN_STARTED, "t", "r")


def test_keep_alive_comments_and_crlf_line_ends_are_handled():
    wire = (b": keep-alive\r\n\r\n"
            b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\r\n\r\n'
            b":ping\n\n"
            b"event: message\nid: 7\n"
            b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n')
    events = list(Stream(None, chunks=[wire[:5], wire[5:40], wire[40:]]))
    assert [e.type for e in events] == [EventType.RUN_STARTED, EventType.RUN_FINISHED]


def test_stream_parses_events_with_the_ag_ui_models():
    events = list(Stream(None, chunks=[WIRE]))
    assert isinstance(events[3], CustomEvent) and events[3].name == "tambo.run.awaiting_input"
    assert isinstance(events[4], RunErrorEvent) and events[4].code == "LLM_SERVER_ERROR"
    assert events[4].model_extra["isRetryable"] is True
    assert events[2].delta == EVENTS[2]["delta"]


def test_an_unknown_event_type_is_skipped():
    wire = b'data: {"type":"SOMETHING_NEW","x":1}\n\ndata: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
    assert [e.type for e in Stream(None, chunks=[wire])] == [EventType.RUN_STARTED]


@pytest.mark.parametrize("payload", [b"not json", b"[1,2]", b'{"type":"TEXT_MESSAGE_CONTENT","delta":"x"}'],
                         ids=["not-json", "not-an-object", "missing-field"])
def test_a_malformed_event_raises(payload):
    with pytest.raises(APIResponseValidationError):
        list(Stream(None, chunks=[b"data: " + payload + b"\n\n"]))


@pytest.mark.parametrize("chunked", [False, True])
def test_events_arrive_while_the_server_is_still_sending(chunked):
    # The server sends one event, then waits until the client has seen it. A client that buffered
    # the body would only get the first event after the server's 5 s wait gave up.
    seen_first = threading.Event()
    with ScriptedServer() as server:
        server.add("GET", "/sse", Reply.sse([EVENTS[0], seen_first, EVENTS[1]], chunked=chunked,
                                            headers={"X-Run-Id": "run_1", "X-Thread-Id": "thr_1"}))
        response = requests.get(server.url + "/sse", stream=True, timeout=10)
        started = time.monotonic()
        with Stream(response) as stream:
            assert (stream.thread_id, stream.run_id) == ("thr_1", "run_1")
            assert next(stream).type == EventType.RUN_STARTED
            assert time.monotonic() - started < 3
            seen_first.set()
            rest = list(stream)
        assert [e.type for e in rest] == [EventType.TEXT_MESSAGE_START]
        assert response.raw.closed


def test_the_response_is_closed_at_the_end_on_close_and_on_leaving_with():
    with ScriptedServer() as server:
        server.add("GET", "/sse", Reply.sse(EVENTS[:2]))
        ended = requests.get(server.url + "/sse", stream=True, timeout=10)
        assert len(list(Stream(ended))) == 2
        assert ended.raw.closed

        early = requests.get(server.url + "/sse", stream=True, timeout=10)
        stream = Stream(early)
        next(stream)
        stream.close()
        assert early.raw.closed and stream.closed
        assert list(stream) == []

        left = requests.get(server.url + "/sse", stream=True, timeout=10)
        with Stream(left) as stream:
            next(stream)
        assert left.raw.closed


def test_closing_from_another_thread_ends_iteration_quietly():
    with ScriptedServer() as server:
        server.add("GET", "/sse", Reply.sse([EVENTS[0], 5.0, EVENTS[1]]))
        response = requests.get(server.url + "/sse", stream=True, timeout=10)
        stream = Stream(response)
        next(stream)
        timer = threading.Timer(0.3, stream.close)
        timer.start()
        started = time.monotonic()
        assert list(stream) == []
        assert time.monotonic() - started < 3
        timer.join()


def test_every_event_carries_the_last_event_id_seen():
    wire = (b'id: 1\ndata: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
            b'data: {"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}\n\n'
            b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\nid: 3\n\n')
    stream = Stream(None, chunks=[wire[i:i + 5] for i in range(0, len(wire), 5)])
    assert [(e.type, stream.last_event_id) for e in stream] == [
        (EventType.RUN_STARTED, "1"), (EventType.TEXT_MESSAGE_START, "1"), (EventType.RUN_FINISHED, "3")]


def test_a_last_event_cut_off_mid_event_is_a_broken_connection():
    # Resumable: the run's events route sends the event again, whole.
    wire = b'id: 1\ndata: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\nid: 2\ndata: {"type":"TEXT_MESS'
    stream = Stream(None, chunks=[wire])
    assert next(stream).type == EventType.RUN_STARTED
    with pytest.raises(APIConnectionError, match="middle of an event"):
        next(stream)
    assert stream.last_event_id == "1"


def test_a_whole_last_event_without_its_blank_line_is_read_with_its_id():
    wire = b'id: 1\ndata: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\nid: 2\ndata: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n'
    stream = Stream(None, chunks=[wire])
    assert [e.type for e in stream] == [EventType.RUN_STARTED, EventType.RUN_FINISHED]
    assert stream.last_event_id == "2"
