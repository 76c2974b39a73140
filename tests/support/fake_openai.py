"""A scripted OpenAI-compatible model server for tests.

A real HTTP server on 127.0.0.1 (stdlib `ThreadingHTTPServer` in a background thread) that speaks
enough of `POST /v1/chat/completions` for the official `openai` client, streaming (SSE) and not.
Tests enqueue one reply per request and assert on what the server received:

    with FakeOpenAI() as fake:
        fake.script(
            Text(["Hel", "lo"]),
            ToolCalls([ToolCall("get_weather", ['{"ci', 'ty": "Par', 'is"}'])]),
            HTTPError(429, retry_after=3),
            Drop(after=["partial"]),
            Stall(after=["thinking"]),
            Trickle(after=["thinking"], every=1.0),
        )
        ...  # point a client at fake.base_url
        fake.requests[0].body["model"], fake.requests[0].api_key

`POST /v1/audio/transcriptions` (multipart) takes the next reply too: a `Text` is the transcript
(`{"text": …}`, with OpenAI's token usage when the `Text` has a `usage`), an `HTTPError` or `Stall` fails
it; its record's body is the form's fields, the file
as `{"filename", "contentType", "data": bytes}`.

An empty script answers `default_reply`, or what `responder(body)` returns when one is set (a rule that
reads the request: tests/support/rule_replies.py `openai_reply`). Streamed bodies use chunked transfer encoding, so a dropped
connection is visible to the client as an incomplete body rather than a clean end of stream.
"""
from __future__ import annotations

import itertools
import json
import select
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Sequence, Union

_DEFAULT_USAGE_PROMPT_TOKENS = 10


def _chunks(value: str | Sequence[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


@dataclass(frozen=True)
class Text:
    """A text answer streamed as the given chunks, `delay` seconds apart."""

    chunks: str | Sequence[str] = ("Hello from the fake model.",)
    delay: float = 0.0
    # None sends no finish chunk (a server that ends the stream without saying why).
    finish_reason: str | None = "stop"
    usage: dict[str, int] | None = None  # None: a usage computed from the chunk count
    # False: no usage chunk even when asked for one (servers that ignore `include_usage`).
    reports_usage: bool = True
    # Reasoning streamed before the text: `reasoning_content` deltas here, thinking blocks on the
    # Anthropic fake (tests/support/fake_anthropic.py).
    reasoning: str | Sequence[str] = ()
    # The data of a redacted thinking block after the reasoning (the Anthropic fake only).
    redacted: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "chunks", _chunks(self.chunks))
        object.__setattr__(self, "reasoning", _chunks(self.reasoning))


@dataclass(frozen=True)
class ToolCall:
    """One tool call; `arguments` are the fragments exactly as they go on the wire (any split)."""

    name: str
    arguments: str | Sequence[str] = ("{}",)
    id: str | None = None  # None: "call_<n>" with n the call's position in its step

    def __post_init__(self) -> None:
        object.__setattr__(self, "arguments", _chunks(self.arguments))


@dataclass(frozen=True)
class ToolCalls:
    """One step calling one or several tools, optionally after some text.

    With `interleave`, the calls' deltas alternate (call 0, call 1, call 0, ...) as some
    OpenAI-compatible servers send them; otherwise each call is sent whole before the next. With
    `repeat_head`, every fragment repeats the call's id, type and name, as other servers do.
    """

    calls: Sequence[ToolCall]
    text: str | Sequence[str] = ()
    delay: float = 0.0
    interleave: bool = False
    repeat_head: bool = False
    finish_reason: str = "tool_calls"
    usage: dict[str, int] | None = None
    reasoning: str | Sequence[str] = ()
    redacted: str | None = None  # as Text's

    def __post_init__(self) -> None:
        object.__setattr__(self, "calls", tuple(self.calls))
        object.__setattr__(self, "text", _chunks(self.text))
        object.__setattr__(self, "reasoning", _chunks(self.reasoning))


@dataclass(frozen=True)
class HTTPError:
    """An error answer before any byte of the stream, with an OpenAI-shaped body."""

    status: int
    message: str | None = None
    retry_after: float | str | None = None  # sent as the Retry-After header when set
    type: str | None = None
    code: str | None = None


Prefix = Union[Text, ToolCalls, Sequence[str]]


@dataclass(frozen=True)
class Drop:
    """Stream the content of `after` (no finish chunk), then drop the connection."""

    after: Prefix = ()


@dataclass(frozen=True)
class Stall:
    """Stream the content of `after`, then send nothing for `seconds`.

    The stall ends early when the client disconnects or the server shuts down.
    """

    after: Prefix = ()
    seconds: float = 60.0


@dataclass(frozen=True)
class Trickle:
    """Stream the content of `after`, then never finish: every `every` seconds one SSE comment (the
    Anthropic fake: a `ping` event), or with `text` one more text delta of it (a stream that never
    ends). A whole (not streamed) answer sends its headers, then one space of its body every `every`
    seconds. Each byte resets a per-read timeout; the trickle ends when the client leaves or the
    server stops."""

    after: Prefix = ()
    every: float = 1.0
    text: str | None = None


@dataclass(frozen=True)
class StreamError:
    """Stream the content of `after`, then an in-stream `data: {"error": ...}` event and [DONE]."""

    after: Prefix = ()
    message: str = "The server had an error while processing your request."


@dataclass(frozen=True)
class Raw:
    """Any answer at all, sent as given: an HTML page, a 200 whose body is an error, garbage."""

    body: bytes
    status: int = 200
    content_type: str = "text/html"


Reply = Union[Text, ToolCalls, HTTPError, Drop, Stall, Trickle, StreamError, Raw]


def honour_stop(reply: Any, stop: Any) -> Any:
    """A scripted text cut before the first of the request's stop sequences, as a vendor does (the
    chunks kept as scripted up to the cut); anything else as it is."""
    stops = [stop] if isinstance(stop, str) else list(stop or ())
    if not isinstance(reply, Text) or not stops:
        return reply
    chunks = [reply.chunks] if isinstance(reply.chunks, str) else list(reply.chunks)
    text = "".join(chunks)
    cut = min((text.find(s) for s in stops if s in text), default=-1)
    if cut < 0:
        return reply
    kept, used = [], 0
    for chunk in chunks:
        if used + len(chunk) >= cut:
            kept.append(chunk[:cut - used])
            break
        kept.append(chunk)
        used += len(chunk)
    return replace(reply, chunks=tuple(c for c in kept if c))


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # the decoded JSON body, or None
    # Set when the server saw the client go away before the answer was complete.
    disconnected: threading.Event = field(default_factory=threading.Event)

    @property
    def api_key(self) -> str | None:
        auth = self.headers.get("authorization", "")
        # Anthropic's clients send the key as x-api-key.
        return auth[len("Bearer "):] if auth.startswith("Bearer ") else self.headers.get("x-api-key")

    @property
    def wants_usage(self) -> bool:
        options = (self.body or {}).get("stream_options") or {}
        return bool(options.get("include_usage"))


_ERROR_KINDS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def error_body(status: int, message: str | None = None, type: str | None = None,
               code: str | None = None) -> dict[str, Any]:
    default_type, default_code = _ERROR_KINDS.get(status, ("server_error", None))
    return {"error": {
        "message": message or f"Fake upstream error {status}.",
        "type": type or default_type,
        "param": None,
        "code": code or default_code,
    }}


def content_deltas(reply: Prefix) -> list[dict[str, Any]]:
    """The `delta` objects of a reply's content, starting with the role, without the finish."""
    if not isinstance(reply, (Text, ToolCalls)):
        reply = Text(tuple(reply))
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    deltas += [{"reasoning_content": chunk} for chunk in reply.reasoning]
    text = reply.chunks if isinstance(reply, Text) else reply.text
    deltas += [{"content": chunk} for chunk in text]
    if isinstance(reply, ToolCalls):
        per_call = [_tool_call_deltas(index, call, reply.repeat_head)
                    for index, call in enumerate(reply.calls)]
        if reply.interleave:
            rounds = itertools.zip_longest(*per_call)
            deltas += [delta for round_ in rounds for delta in round_ if delta is not None]
        else:
            deltas += [delta for call_deltas in per_call for delta in call_deltas]
    return deltas


def _tool_call_deltas(index: int, call: ToolCall, repeat_head: bool) -> list[dict[str, Any]]:
    # As OpenAI does: id, type and name once with empty arguments, then argument fragments only.
    head = {"index": index, "id": call.id or f"call_{index}", "type": "function"}
    items = [{**head, "function": {"name": call.name, "arguments": ""}}]
    for fragment in call.arguments:
        function: dict[str, Any] = {"arguments": fragment}
        items.append({"index": index, "function": function})
        if repeat_head:
            items[-1].update(head)
            function["name"] = call.name
    return [{"tool_calls": [item]} for item in items]


def _usage(reply: Text | ToolCalls, deltas: list[dict[str, Any]]) -> dict[str, int]:
    if reply.usage is not None:
        return dict(reply.usage)
    completion = len(deltas) - 1
    return {"prompt_tokens": _DEFAULT_USAGE_PROMPT_TOKENS, "completion_tokens": completion,
            "total_tokens": _DEFAULT_USAGE_PROMPT_TOKENS + completion}


class _EndAnswer(Exception):
    """Stop answering and close the connection (the client left, the stall ended, or shutdown)."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # Keep test output clean.

    def do_POST(self) -> None:
        raw = self._read_body()
        if self.path.rstrip("/") == "/v1/audio/transcriptions":
            return self._transcribe(raw)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        record = self._record(body)
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._send_json(404, error_body(404, "Unknown path."))
        if not isinstance(body, dict):
            return self._send_json(400, error_body(400, "The body is not a JSON object."))
        reply = honour_stop(self.server.fake._next_reply(body), body.get("stop"))
        try:
            if isinstance(reply, Raw):
                self._send_raw(reply)
            elif isinstance(reply, HTTPError):
                retry_after = {} if reply.retry_after is None else {"Retry-After": str(reply.retry_after)}
                self._send_json(reply.status, error_body(reply.status, reply.message, reply.type, reply.code),
                                retry_after)
            elif body.get("stream"):
                self._stream(reply, record)
            else:
                self._answer_whole(reply, record)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            record.disconnected.set()
            self.close_connection = True
        except _EndAnswer:
            self.close_connection = True

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while (size := int(self.rfile.readline().split(b";")[0], 16)) > 0:
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            self.rfile.readline()
            return b"".join(parts)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _transcribe(self, raw: bytes) -> None:
        record = self._record(_form_fields(self.headers.get("Content-Type", ""), raw))
        reply = self.server.fake._next_reply()
        try:
            if isinstance(reply, HTTPError):
                self._send_json(reply.status, error_body(reply.status, reply.message, reply.type, reply.code))
            elif isinstance(reply, Stall):
                self._wait(reply.seconds, record)
                raise _EndAnswer
            else:
                answer = {"text": "".join(reply.chunks) if isinstance(reply, Text) else ""}
                if isinstance(reply, Text) and reply.usage:
                    # As gpt-4o-transcribe reports it (whisper-1 reports seconds, or nothing).
                    answer["usage"] = {"type": "tokens", "input_tokens": reply.usage["prompt_tokens"],
                                       "output_tokens": reply.usage["completion_tokens"],
                                       "total_tokens": reply.usage["total_tokens"]}
                self._send_json(200, answer)
        except (BrokenPipeError, ConnectionResetError, _EndAnswer):
            record.disconnected.set()
            self.close_connection = True

    # --- recording and plain answers ---

    def _record(self, body: Any) -> RecordedRequest:
        record = RecordedRequest(method=self.command, path=self.path,
                                 headers={k.lower(): v for k, v in self.headers.items()}, body=body)
        self.server.fake._record(record)
        return record

    def _send_raw(self, reply: Raw) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(reply.body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(reply.body)

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", "req_fake")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def _answer_whole(self, reply: Reply, record: RecordedRequest) -> None:
        if isinstance(reply, Trickle):
            self._trickle_body(reply, record)
        if isinstance(reply, Stall):
            self._wait(reply.seconds, record)
            raise _EndAnswer  # Nothing was answered; close like a server that gave up.
        if isinstance(reply, Drop):
            self._drop()
            return
        if isinstance(reply, StreamError):
            self._send_json(500, error_body(500, reply.message))
            return
        deltas = content_deltas(reply)
        message: dict[str, Any] = {"role": "assistant",
                                   "content": "".join(d.get("content", "") for d in deltas) or None}
        if isinstance(reply, ToolCalls):
            message["tool_calls"] = [
                {"id": call.id or f"call_{i}", "type": "function",
                 "function": {"name": call.name, "arguments": "".join(call.arguments)}}
                for i, call in enumerate(reply.calls)]
        self._send_json(200, {
            **self._envelope(record, "chat.completion"),
            "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason,
                         "logprobs": None}],
            "usage": _usage(reply, deltas),
        })

    # --- streaming ---

    def _envelope(self, record: RecordedRequest, object_: str) -> dict[str, Any]:
        return {"id": f"chatcmpl-fake{id(record):x}", "object": object_,
                "created": int(time.time()), "model": (record.body or {}).get("model") or "fake-model"}

    def _stream(self, reply: Reply, record: RecordedRequest) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-request-id", "req_fake")
        self.send_header("Connection", "close")
        self.end_headers()
        envelope = self._envelope(record, "chat.completion.chunk")
        prefix = reply.after if isinstance(reply, (Drop, Stall, Trickle, StreamError)) else reply
        delay = prefix.delay if isinstance(prefix, (Text, ToolCalls)) else 0.0
        deltas = content_deltas(prefix)
        for position, delta in enumerate(deltas):
            if position and delay:
                self._wait(delay, record)
            self._send_event({**envelope, "choices": [
                {"index": 0, "delta": delta, "finish_reason": None, "logprobs": None}]})
        if isinstance(reply, Drop):
            return self._drop()
        if isinstance(reply, Stall):
            self._wait(reply.seconds, record)
            raise _EndAnswer  # Close without finishing the body, like a server that gave up.
        if isinstance(reply, Trickle):
            self._trickle(reply, record, lambda: self._send_event({**envelope, "choices": [
                {"index": 0, "delta": {"content": reply.text}, "finish_reason": None, "logprobs": None}]}),
                lambda: self._send_chunk(b": still here\n\n"))
        if isinstance(reply, StreamError):
            self._send_event(error_body(500, reply.message))
        else:
            assert isinstance(reply, (Text, ToolCalls))
            if reply.finish_reason is not None:
                self._send_event({**envelope, "choices": [
                    {"index": 0, "delta": {}, "finish_reason": reply.finish_reason, "logprobs": None}]})
            if record.wants_usage and getattr(reply, "reports_usage", True):
                self._send_event({**envelope, "choices": [], "usage": _usage(reply, deltas)})
        self._send_chunk(b"data: [DONE]\n\n")
        self._send_chunk(b"")

    def _trickle(self, reply: Trickle, record: RecordedRequest, send_text: Any, send_nothing: Any) -> None:
        """`reply`'s trickle until the client leaves (raises _EndAnswer) or the server stops."""
        while True:
            self._wait(reply.every, record)
            if reply.text:
                send_text()
            else:
                send_nothing()
            self.wfile.flush()

    def _trickle_body(self, reply: Trickle, record: RecordedRequest) -> None:
        """A whole answer's headers, then one space of its body at a time, never finished."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self._trickle(reply, record, lambda: self._send_chunk(b" "), lambda: self._send_chunk(b" "))

    def _send_event(self, payload: dict[str, Any]) -> None:
        self._send_chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def _send_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _drop(self) -> None:
        # Close without the terminating chunk, so the client sees an incomplete body.
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _wait(self, seconds: float, record: RecordedRequest) -> None:
        """Sleep up to `seconds`; raise _EndAnswer if the client leaves or the server stops."""
        deadline = time.monotonic() + seconds
        stopping = self.server.fake._stopping
        while (remaining := deadline - time.monotonic()) > 0:
            if stopping.is_set():
                raise _EndAnswer
            readable, _, _ = select.select([self.connection], [], [], min(remaining, 0.02))
            if readable and self._peer_closed():
                record.disconnected.set()
                raise _EndAnswer

    def _peer_closed(self) -> bool:
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (ConnectionResetError, ConnectionAbortedError):
            return True
        except BlockingIOError:
            return False


def _form_fields(content_type: str, raw: bytes) -> dict[str, Any]:
    """A multipart/form-data body's fields: text values as str, files as {filename, contentType, data}."""
    from email.parser import BytesParser
    from email.policy import HTTP

    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    fields: dict[str, Any] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        data = part.get_payload(decode=True) or b""
        filename = part.get_filename()
        fields[name] = ({"filename": filename, "contentType": part.get_content_type(), "data": data}
                        if filename is not None else data.decode())
    return fields


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Stalled handlers end on their own once `_stopping` is set; never hang shutdown on them.
    block_on_close = False
    fake: "FakeOpenAI"


class FakeOpenAI:
    """The scripted server. Use as a context manager, or call start() and stop()."""

    handler_class: type[BaseHTTPRequestHandler] = _Handler

    def __init__(self, default_reply: Reply | None = None) -> None:
        self.default_reply: Reply = default_reply or Text()
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self._lock = threading.Lock()
        self._script: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---

    def start(self) -> "FakeOpenAI":
        self._server = _Server(("127.0.0.1", 0), self.handler_class)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        assert self._thread is not None
        self._thread.join(timeout=5)
        self._server = None

    def __enter__(self) -> "FakeOpenAI":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "the fake server is not running"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # --- script and records ---

    def script(self, *replies: Reply) -> None:
        """Enqueue replies; each request to /v1/chat/completions takes the next one."""
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self) -> int:
        """How many scripted replies no request has taken yet."""
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            assert self._requests, "the fake server has received no request"
            return self._requests[-1]

    def _next_reply(self, body: dict[str, Any] | None = None) -> Reply:
        with self._lock:
            if self._script:
                return self._script.popleft()
            responder = self.responder
        return responder(body) if responder is not None and body is not None else self.default_reply

    def _record(self, record: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(record)
