"""The `anthropic` provider: Anthropic's native Messages API, through the official `anthropic` client.

The request is translated from the interface's OpenAI chat form (providers/base.py) to Messages
form by `messages_params`; the streamed answer (message_start, content_block_start/delta/stop,
message_delta, message_stop, error) is folded into the interface's deltas by `_EventFold`: text,
tool use with its input JSON as it streams, thinking, usage. As in providers/openai_provider.py
the client sends the request and maps HTTP errors, and the body is read raw (one SSE decoder, orjson),
each read's events folded together (providers/batching.py).
This module does not import Django.
"""
from __future__ import annotations

from contextlib import aclosing
from typing import Any, AsyncIterator

import anthropic
import orjson

from providers.anthropic_messages import messages_params
from providers.base import (Completion, Delta, ModelError, ModelRequest, ReasoningBlock, ReasoningDelta, StepEnd,
                            TextDelta, ToolCallDelta)
from providers.openai_provider import (MSG_INCOMPLETE, MSG_RATE_LIMITED, MSG_STREAM_ERROR, MSG_UNREADABLE, caused,
                                       decoded_batches, sdk_model_error)
from providers.batching import merged
from providers.deadline import within_call_deadline
from providers.vendor_client import VendorProvider, stream_folded

_STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "max_tokens": "length",
                 "tool_use": "tool_calls", "refusal": "content_filter"}


class AnthropicProvider(VendorProvider):
    name = "anthropic"

    def _make_client(self) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(api_key=self._api_key, base_url=self._base_url, timeout=self.timeout,
                                        http_client=self._http_client(),
                                        max_retries=0)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Delta]:
        """Yield the deltas of one model step, ending with StepEnd; raise ModelError on failure.
        Closing this generator closes the HTTP response at once."""
        params = messages_params(request, default_model=self.default_model)
        opening = self._client().messages.with_streaming_response.create(**params, stream=True)
        # aclosing: closing this generator closes the template's at once, and with it the response.
        async with aclosing(stream_folded(opening, api_error=anthropic.APIError, to_model_error=model_error,
                                          read=_events, fold=_EventFold(), deadlines=self.deadlines)) as deltas:
            async for delta in deltas:
                yield delta

    async def complete(self, request: ModelRequest) -> Completion:
        """One non-streamed answer (no tools); the same error mapping as `stream`, within the whole-call
        deadline (providers/deadline.py)."""
        params = messages_params(ModelRequest(messages=request.messages, model=request.model,
                                              max_tokens=request.max_tokens, temperature=request.temperature,
                                              parameters=request.parameters),
                                 default_model=self.default_model)
        try:
            message = await within_call_deadline(self._client().messages.create(**params), self.deadlines)
        except anthropic.APIError as exc:
            raise model_error(exc, started=False) from exc
        except ValueError as exc:
            raise ModelError("LLM_SERVER_ERROR", MSG_UNREADABLE, retryable=True) from exc
        text = "".join(getattr(block, "text", "") for block in message.content or ()
                       if getattr(block, "type", None) == "text")
        usage = _usage(message.usage.input_tokens, message.usage.output_tokens) if message.usage else None
        return Completion(text=text, finish_reason=_STOP_REASONS.get(message.stop_reason or "", "stop"),
                          usage=usage)


def _usage(input_tokens: int | None, output_tokens: int | None) -> dict[str, int]:
    prompt, completion = input_tokens or 0, output_tokens or 0
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


async def _events(body: AsyncIterator[bytes]) -> AsyncIterator[list[dict[str, Any]]]:
    """The stream's event objects, a list per read of the body (every event that read completed),
    until message_stop or the end of the body; ModelError for a broken connection, a timeout, an
    `error` event or data that is not JSON, after handing on the events before it."""
    async for events in decoded_batches(body, _decoded):
        yield events


def _decoded(payloads: list[bytes]) -> tuple[list[dict[str, Any]], ModelError | None, bool]:
    """(the events of one read's payloads, up to message_stop or the first that is an error; the
    ModelError of that error, if any; whether the stream ended, by message_stop or an error)."""
    events: list[dict[str, Any]] = []
    for payload in payloads:
        try:
            event = orjson.loads(payload)
        except orjson.JSONDecodeError as exc:
            return events, caused(ModelError("LLM_SERVER_ERROR", MSG_UNREADABLE, retryable=True), exc), True
        if not isinstance(event, dict):
            return events, ModelError("LLM_SERVER_ERROR", MSG_UNREADABLE, retryable=True), True
        kind = event.get("type")
        if kind == "error":
            error = event.get("error") or {}
            if isinstance(error, dict) and error.get("type") == "rate_limit_error":
                return events, ModelError("LLM_RATE_LIMITED", MSG_RATE_LIMITED, retryable=True), True
            return events, ModelError("LLM_SERVER_ERROR", MSG_STREAM_ERROR, retryable=True), True
        events.append(event)
        if kind == "message_stop":
            return events, None, True
    return events, None, False


class _EventFold:
    """Turns Messages stream events (decoded JSON) into deltas, remembering what the step's end needs.

    Content blocks are numbered by the stream; tool-use blocks become tool calls numbered from 0 in
    their order, thinking blocks reasoning blocks numbered the same way. Each thinking block is also
    given whole, with its signature, once it stops, and each redacted thinking block (no text to show)
    as it came: ReasoningBlock, what a tool loop's next request must send back."""

    def __init__(self) -> None:
        self.stop_reason: str | None = None
        self.stopped = False
        self.input_tokens = 0
        self.output_tokens = 0
        self._kinds: dict[int, tuple[str, int]] = {}  # stream block index -> (kind, tool call/reasoning no.)
        self._calls = 0
        self._thoughts = 0
        # A thinking block's text fragments and signature, by stream index, until its block stops.
        self._thinking: dict[int, list[str]] = {}
        self._signatures: dict[int, str] = {}

    def feed_read(self, events: list[dict[str, Any]]) -> list[Delta]:
        """The deltas of one read's events, merged (providers/batching.py)."""
        deltas: list[Delta] = []
        for event in events:
            deltas += self.feed(event)
        return merged(deltas)

    def feed(self, event: dict[str, Any]) -> list[Delta]:
        kind = event.get("type")
        if kind == "message_start":
            usage = (event.get("message") or {}).get("usage") or {}
            self.input_tokens = _int(usage.get("input_tokens")) + _int(usage.get("cache_read_input_tokens")) + _int(
                usage.get("cache_creation_input_tokens"))
            self.output_tokens = _int(usage.get("output_tokens"))
        elif kind == "content_block_start":
            return self._start(_int(event.get("index")), event.get("content_block") or {})
        elif kind == "content_block_delta":
            return self._delta(_int(event.get("index")), event.get("delta") or {})
        elif kind == "content_block_stop":
            return self._stop(_int(event.get("index")))
        elif kind == "message_delta":
            self.stop_reason = (event.get("delta") or {}).get("stop_reason") or self.stop_reason
            usage = event.get("usage") or {}
            if usage.get("output_tokens") is not None:
                self.output_tokens = _int(usage.get("output_tokens"))
        elif kind == "message_stop":
            self.stopped = True
        return []

    def _start(self, index: int, block: dict[str, Any]) -> list[Delta]:
        block_type = block.get("type")
        if block_type == "tool_use":
            number = self._calls
            self._calls += 1
            self._kinds[index] = ("tool_use", number)
            # The block's `input` is {} here; the arguments stream as input_json_delta.
            return [ToolCallDelta(index=number, id=block.get("id"), name=block.get("name"), arguments="")]
        if block_type == "thinking":
            number = self._thoughts
            self._thoughts += 1
            self._kinds[index] = ("thinking", number)
            text = block.get("thinking") or ""
            self._thinking[index] = [text] if text else []
            if block.get("signature"):
                self._signatures[index] = block["signature"]
            return [ReasoningDelta(text, block=number)] if text else []
        if block_type == "redacted_thinking":
            return [ReasoningBlock({"type": "redacted_thinking", "data": block.get("data") or ""})]
        if block_type == "text":
            self._kinds[index] = ("text", 0)
            text = block.get("text") or ""
            return [TextDelta(text)] if text else []
        return []

    def _delta(self, index: int, delta: dict[str, Any]) -> list[Delta]:
        kind, number = self._kinds.get(index, ("", 0))
        delta_type = delta.get("type")
        if delta_type == "text_delta" and delta.get("text"):
            return [TextDelta(delta["text"])]
        if delta_type == "input_json_delta" and kind == "tool_use" and delta.get("partial_json"):
            return [ToolCallDelta(index=number, id=None, name=None, arguments=delta["partial_json"])]
        if delta_type == "thinking_delta" and delta.get("thinking") and kind == "thinking":
            self._thinking[index].append(delta["thinking"])
            return [ReasoningDelta(delta["thinking"], block=number)]
        if delta_type == "signature_delta" and kind == "thinking":
            self._signatures[index] = self._signatures.get(index, "") + (delta.get("signature") or "")
        return []  # citations and kinds not known yet

    def _stop(self, index: int) -> list[Delta]:
        if index not in self._thinking:
            return []
        text = "".join(self._thinking.pop(index))
        # The block exactly as it streamed: Anthropic checks the signature against this text.
        return [ReasoningBlock({"type": "thinking", "thinking": text, "signature": self._signatures.pop(index, "")})]

    def end(self) -> StepEnd:
        if not self.stopped or self.stop_reason is None:
            raise ModelError("LLM_SERVER_ERROR", MSG_INCOMPLETE, retryable=True)
        usage = _usage(self.input_tokens, self.output_tokens)
        return StepEnd(finish_reason=_STOP_REASONS.get(self.stop_reason, "stop"), usage=usage)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def model_error(exc: anthropic.APIError, *, started: bool) -> ModelError:
    """The safe ModelError for an anthropic client error (the same codes and sentences as openai's);
    a 529 (overloaded) is retryable, a reason to fall back, and its `Retry-After` is kept."""
    return sdk_model_error(exc, anthropic, started=started, server_retry_after=True)
