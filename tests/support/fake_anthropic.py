"""A scripted Anthropic Messages server for tests, next to the OpenAI-compatible one.

The same machinery, replies and records as tests/support/fake_openai.py (`Text`, `ToolCalls`,
`HTTPError`, `Drop`, `Stall`, `Trickle`, `StreamError`; `requests`, `api_key` from `x-api-key`), speaking
`POST /v1/messages` as the official `anthropic` client reads it: streamed (message_start,
content_block_start/delta/stop with text_delta, input_json_delta and thinking_delta, message_delta
with the stop reason and usage, message_stop) and whole. A reply's `reasoning` becomes one thinking
block before the text, signed (`signature_of`), and a reply's `redacted` a redacted thinking block
after it. tests/providers/test_fake_anthropic.py checks it with the official SDK.

As the real API does, a request with thinking on whose last assistant turn called tools must open
that turn with the thinking blocks it was given, unmodified: else a 400 with Anthropic's message
(`THINKING_REQUIRED`), and a thinking block whose signature does not match its text, or redacted
data this fake never gave, a 400 too.

    with FakeAnthropic() as fake:
        fake.script(Text(["Hel", "lo"], reasoning=["Let me", " think"]))
        anthropic.Anthropic(base_url=fake.base_url, api_key="k")  # no /v1: the SDK adds it
"""
from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from tests.support.fake_openai import (Drop, FakeOpenAI, HTTPError, Raw, RecordedRequest, Reply, Stall,
                                       StreamError, Text, ToolCalls, Trickle, _EndAnswer, _Handler, honour_stop)

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}
_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "content_filter": "refusal"}
PROMPT_TOKENS = 10


THINKING_REQUIRED = (
    "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. When "
    "`thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the "
    "lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from "
    "previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking")


def signature_of(thinking: str) -> str:
    """The signature this fake gives a thinking block's text (the real one is opaque too)."""
    return "EqQB" + base64.b64encode(hashlib.sha256(thinking.encode()).digest()).decode()


def anthropic_error(status: int, message: str | None = None) -> dict[str, Any]:
    return {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"),
                                       "message": message or f"Fake upstream error {status}."}}


def stream_events(reply: Text | ToolCalls, model: str) -> list[dict[str, Any]]:
    """A reply's Messages stream events, message_start to the last content_block_stop."""
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": (reply.usage or {}).get("prompt_tokens", PROMPT_TOKENS), "output_tokens": 1}}}]
    index = 0
    if reply.reasoning:
        events.append({"type": "content_block_start", "index": index,
                       "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
        events += [{"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": t}}
                   for t in reply.reasoning]
        events.append({"type": "content_block_delta", "index": index,
                       "delta": {"type": "signature_delta", "signature": signature_of("".join(reply.reasoning))}})
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    if reply.redacted:
        events.append({"type": "content_block_start", "index": index,
                       "content_block": {"type": "redacted_thinking", "data": reply.redacted}})
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    text = reply.chunks if isinstance(reply, Text) else reply.text
    if text:
        events.append({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
        events += [{"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": t}}
                   for t in text]
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    for n, call in enumerate(reply.calls if isinstance(reply, ToolCalls) else ()):
        events.append({"type": "content_block_start", "index": index, "content_block": {
            "type": "tool_use", "id": call.id or f"toolu_{n}", "name": call.name, "input": {}}})
        events += [{"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": fragment}} for fragment in call.arguments]
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    return events


def thinking_refusal(body: dict[str, Any], redacted: set[str]) -> str | None:
    """Anthropic's 400 message for a thinking request whose tool loop lost its signed thinking."""
    if ((body.get("thinking") or {}).get("type") not in ("enabled", "adaptive")):
        return None
    messages = body.get("messages") or []
    for index, message in enumerate(messages):
        for position, block in enumerate(_content(message)):
            if block.get("type") == "thinking" and block.get("signature") != signature_of(block.get("thinking", "")):
                return f"messages.{index}.content.{position}: Invalid `signature` in `thinking` block"
            if block.get("type") == "redacted_thinking" and block.get("data") not in redacted:
                return f"messages.{index}.content.{position}: Invalid `data` in `redacted_thinking` block"
    turns = [(i, m) for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if not turns:
        return None
    index, last = turns[-1]
    content = _content(last)
    if not any(block.get("type") == "tool_use" for block in content):
        return None
    if content[0].get("type") in ("thinking", "redacted_thinking"):
        return None
    return THINKING_REQUIRED.format(index=index, found=content[0].get("type"))


def _content(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in content or () if isinstance(block, dict)]


def _output_tokens(reply: Text | ToolCalls, events: list[dict[str, Any]]) -> int:
    if reply.usage is not None:
        return reply.usage.get("completion_tokens", 0)
    return sum(1 for e in events if e["type"] == "content_block_delta")


class _AnthropicHandler(_Handler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        record = self._record(body)
        if self.path.split("?")[0].rstrip("/") != "/v1/messages":
            return self._send_json(404, anthropic_error(404, "Unknown path."))
        if not isinstance(body, dict) or "max_tokens" not in body or not body.get("messages"):
            return self._send_json(400, anthropic_error(400, "max_tokens and messages are required."))
        refusal = thinking_refusal(body, self.server.fake.redacted_given)
        if refusal:
            return self._send_json(400, anthropic_error(400, refusal))
        reply = honour_stop(self.server.fake._reply_for(body), body.get("stop_sequences"))
        if isinstance(reply, (Text, ToolCalls)) and reply.redacted:
            self.server.fake.redacted_given.add(reply.redacted)
        try:
            if isinstance(reply, Raw):
                self._send_raw(reply)
            elif isinstance(reply, HTTPError):
                retry_after = {} if reply.retry_after is None else {"Retry-After": str(reply.retry_after)}
                self._send_json(reply.status, anthropic_error(reply.status, reply.message), retry_after)
            elif body.get("stream"):
                self._stream_messages(reply, record)
            else:
                self._whole_message(reply, record)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            record.disconnected.set()
            self.close_connection = True
        except _EndAnswer:
            self.close_connection = True

    def _model(self, record: RecordedRequest) -> str:
        return (record.body or {}).get("model") or "fake-claude"

    def _whole_message(self, reply: Reply, record: RecordedRequest) -> None:
        if isinstance(reply, (Stall, Drop, Trickle, StreamError)):
            return self._answer_whole(reply, record)  # the OpenAI fake's stall, drop, trickle and 500
        events = stream_events(reply, self._model(record))
        content: list[dict[str, Any]] = []
        for event in events:
            if event["type"] == "content_block_start":
                content.append(dict(event["content_block"]))
            elif event["type"] == "content_block_delta":
                block, delta = content[event["index"]], event["delta"]
                if delta["type"] == "text_delta":
                    block["text"] += delta["text"]
                elif delta["type"] == "thinking_delta":
                    block["thinking"] += delta["thinking"]
                elif delta["type"] == "signature_delta":
                    block["signature"] += delta["signature"]
                elif delta["type"] == "input_json_delta":
                    block["_json"] = block.get("_json", "") + delta["partial_json"]
        for block in content:
            if "_json" in block:
                block["input"] = json.loads(block.pop("_json"))
        self._send_json(200, {**events[0]["message"], "content": content,
                              "stop_reason": _STOP.get(reply.finish_reason or "stop", "end_turn"),
                              "usage": {"input_tokens": PROMPT_TOKENS, "output_tokens": _output_tokens(reply, events)}})

    def _stream_messages(self, reply: Reply, record: RecordedRequest) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", "req_fake")
        self.send_header("Connection", "close")
        self.end_headers()
        prefix = reply.after if isinstance(reply, (Drop, Stall, Trickle, StreamError)) else reply
        if not isinstance(prefix, (Text, ToolCalls)):
            prefix = Text(tuple(prefix), finish_reason=None)
        events = stream_events(prefix, self._model(record))
        if isinstance(reply, Trickle) and reply.text and events[-1]["type"] != "content_block_stop":
            # Nothing shown yet: the trickled text opens its block.
            events.append({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
            events.append({"type": "content_block_stop", "index": 0})
        if isinstance(reply, (Drop, Stall, Trickle, StreamError)) and events[-1]["type"] == "content_block_stop":
            events.pop()  # cut inside the last block, as a real failure mid-answer would
        for position, event in enumerate(events):
            if position and prefix.delay:
                self._wait(prefix.delay, record)
            self._send_named(event)
        if isinstance(reply, Drop):
            return self._drop()
        if isinstance(reply, Stall):
            self._wait(reply.seconds, record)
            raise _EndAnswer
        if isinstance(reply, Trickle):
            # Into the block left open above; pings are what Anthropic sends while it works.
            index = events[-1].get("index", 0)
            self._trickle(reply, record, lambda: self._send_named({
                "type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": reply.text}}),
                lambda: self._send_named({"type": "ping"}))
        if isinstance(reply, StreamError):
            self._send_named(anthropic_error(529, reply.message) | {"type": "error"})
        elif reply.finish_reason is not None:
            self._send_named({"type": "message_delta",
                              "delta": {"stop_reason": _STOP.get(reply.finish_reason, "end_turn"),
                                        "stop_sequence": None},
                              "usage": {"output_tokens": _output_tokens(reply, events)}})
            self._send_named({"type": "message_stop"})
        self._send_chunk(b"")

    def _send_named(self, payload: dict[str, Any]) -> None:
        # Anthropic names every event (`event: <type>`); the SDK's decoder reads both lines.
        self._send_chunk(b"event: %s\ndata: %s\n\n" % (payload["type"].encode(), json.dumps(payload).encode()))


class FakeAnthropic(FakeOpenAI):
    """The scripted Messages server; `base_url` has no /v1 (the anthropic client adds it)."""

    handler_class = _AnthropicHandler

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.redacted_given: set[str] = set()  # the redacted thinking data this fake streamed
        # Answers a request when nothing is scripted: body -> Reply (tests/support/rule_replies.py).
        self.responder: Any = None

    def _reply_for(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            scripted = bool(self._script)
        if self.responder is not None and not scripted:
            return self.responder(body)
        return self._next_reply()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"
