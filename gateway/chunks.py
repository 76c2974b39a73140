"""Provider deltas → OpenAI `chat.completion.chunk` objects, or one `chat.completion`.

The stream follows docs/protocol.md#identity-and-auth to the letter, so strict clients (the openai SDK's stream
helpers, TinyRobot's delta merge) rebuild the same message OpenAI would have given them: `role`
once, in the first delta; a tool call's `id`, `type` and `name` once, in its first delta, then only
argument fragments; `finish_reason` on the last choice chunk; `created` the same everywhere.
"""
from __future__ import annotations

import json
import secrets
import time
from typing import Any

from core.ids import new_id
from providers.base import Delta, ReasoningBlock, ReasoningDelta, StepEnd, TextDelta, ToolCallDelta

ZERO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
DONE = b"data: [DONE]\n\n"


def completion_id() -> str:
    return f"chatcmpl-{secrets.token_hex(12)}"


def sse_line(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


class ChunkEncoder:
    """Turns one step's deltas into chunk dicts; one encoder per answer."""

    def __init__(self, *, model: str, include_usage: bool = False):
        self.id = completion_id()
        self.created = int(time.time())
        self.model = model
        self.include_usage = include_usage
        self._role_sent = False
        self._calls: dict[int, str] = {}  # vendor index → call id, for calls already announced

    def feed(self, delta: Delta) -> list[dict[str, Any]]:
        """The chunks for one delta: none, one choice chunk, or (for StepEnd) the closing chunks."""
        if isinstance(delta, StepEnd):
            return self._end(delta)
        if isinstance(delta, TextDelta):
            if not delta.text:
                return []
            return [self._choice({"content": delta.text})]
        if isinstance(delta, ToolCallDelta):
            return self._tool_call(delta)
        if isinstance(delta, ReasoningDelta):
            # As OpenAI-compatible reasoning endpoints stream it (DeepSeek, vLLM): clients that do not
            # know the field skip it.
            return [self._choice({"reasoning_content": delta.text})] if delta.text else []
        if isinstance(delta, ReasoningBlock):
            return []  # a signed block only Anthropic reads back; the gateway's caller keeps the history
        raise TypeError(f"unexpected delta {delta!r}")

    def _tool_call(self, delta: ToolCallDelta) -> list[dict[str, Any]]:
        if delta.index not in self._calls:
            call_id = delta.id or new_id("call")
            self._calls[delta.index] = call_id
            item = {"index": delta.index, "id": call_id, "type": "function",
                    "function": {"name": delta.name or "", "arguments": delta.arguments}}
        elif delta.arguments:
            item = {"index": delta.index, "function": {"arguments": delta.arguments}}
        else:
            return []
        return [self._choice({"tool_calls": [item]})]

    def _end(self, end: StepEnd) -> list[dict[str, Any]]:
        usage = end.usage or ZERO_USAGE
        last = self._choice({}, finish_reason=end.finish_reason)
        if not self.include_usage:
            return [last]
        last["usage"] = usage
        return [last, {**self._envelope(), "choices": [], "usage": usage}]

    def _choice(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        if not self._role_sent:
            self._role_sent = True
            delta = {"role": "assistant", **delta}
            delta.setdefault("content", "" if "tool_calls" not in delta else None)
        return {**self._envelope(), "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    def _envelope(self) -> dict[str, Any]:
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model}


class CompletionBuilder:
    """Folds one step's deltas into a non-streaming `chat.completion` body."""

    def __init__(self, *, model: str):
        self.model = model
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        # Each call's argument fragments, joined once in `body`: `+=` per fragment would be quadratic.
        self._arguments: dict[int, list[str]] = {}
        self.end: StepEnd | None = None

    def feed(self, delta: Delta) -> None:
        if isinstance(delta, TextDelta):
            self.text.append(delta.text)
        elif isinstance(delta, ToolCallDelta):
            call = self.calls.setdefault(delta.index, {"id": delta.id or new_id("call"), "type": "function",
                                                       "function": {"name": delta.name or "", "arguments": ""}})
            self._arguments.setdefault(delta.index, []).append(delta.arguments)
        elif isinstance(delta, StepEnd):
            self.end = delta

    def body(self) -> dict[str, Any]:
        assert self.end is not None, "the step has not ended"
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text) or None, "refusal": None}
        for index, call in self.calls.items():
            call["function"]["arguments"] = "".join(self._arguments.get(index, ()))
        if self.calls:
            message["tool_calls"] = [self.calls[index] for index in sorted(self.calls)]
        elif message["content"] is None:
            message["content"] = ""
        return {
            "id": completion_id(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.end.finish_reason, "logprobs": None}],
            "usage": self.end.usage or ZERO_USAGE,
        }
