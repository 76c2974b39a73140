"""Message content on the `chat <model>` spans, only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
on (docs/operations-telemetry.md): the OpenTelemetry GenAI conventions' `gen_ai.input.messages` and
`gen_ai.output.messages`, as JSON strings (the conventions allow a string on a span, whose attributes
cannot hold nested objects).

Each message is `{"role", "parts": [...]}` with parts `text` (`content`), `tool_call` (`id`, `name`,
`arguments`) and `tool_call_response` (`id`, `response`); an output message adds `finish_reason`.
Pure functions: the conversion runs only for a span that captures content.
"""
from __future__ import annotations

import json
import os
from typing import Any, Iterable

# What turns it on: the conventions' boolean, and opentelemetry-util-genai's span modes.
_ON = {"true", "span_only", "span_and_event"}


def capture_enabled() -> bool:
    return os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "").strip().lower() in _ON


def input_messages(messages: Iterable[dict[str, Any]]) -> str:
    """The request's messages (OpenAI's chat shape, as ModelRequest holds them) in the conventions' form."""
    out = []
    for message in messages:
        role = message.get("role") or "user"
        if role == "tool":
            out.append({"role": "tool", "parts": [{"type": "tool_call_response", "id": message.get("tool_call_id"),
                                                   "response": _text_of(message.get("content"))}]})
            continue
        parts = _content_parts(message.get("content"))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            parts.append({"type": "tool_call", "id": call.get("id"), "name": function.get("name"),
                          "arguments": _arguments(function.get("arguments"))})
        out.append({"role": role, "parts": parts})
    return _json(out)


def output_messages(*, text: str, calls: Iterable[tuple[str, str, str]], finish_reason: str | None) -> str:
    """One model answer, its text and (id, name, arguments) tool calls, in the conventions' form."""
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    parts += [{"type": "tool_call", "id": call_id, "name": name, "arguments": _arguments(arguments)}
              for call_id, name, arguments in calls]
    return _json([{"role": "assistant", "parts": parts, "finish_reason": finish_reason or "unknown"}])


def _content_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": content}] if content else []
    parts = []
    for part in content or ():
        kind = part.get("type")
        if kind == "text":
            parts.append({"type": "text", "content": part.get("text", "")})
        elif kind == "image_url":
            url = (part.get("image_url") or {}).get("url", "")
            # An inline image is its bytes: named, not copied into the trace.
            parts.append({"type": "uri", "modality": "image", "uri": url} if not url.startswith("data:")
                         else {"type": "blob", "modality": "image", "mime_type": url[5:].split(";", 1)[0]})
        else:
            parts.append({"type": kind or "unknown"})
    return parts


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or () if isinstance(part, dict))


def _arguments(arguments: Any) -> Any:
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments  # what the model sent, unparsed, as the conventions allow


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
