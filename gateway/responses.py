"""The OpenAI Responses API on the gateway (`POST /api/responses`, gateway/README.md#the-responses-api).

In: a Responses request is translated to a Chat Completions body (`chat_body`), which then goes
through the chat-completions gateway's one check (gateway/translate.py) and its one metered model
call (gateway/views.py `_model_call`). Out: the provider's deltas folded into Responses output items
(`ResponseFold`): the stream's events (`response.created` … `response.output_text.delta` …
`response.completed`) and the whole `response` object. Nothing is stored (`store` is answered false),
so `previous_response_id` is refused with a 400 that says to send the conversation instead.
"""
from __future__ import annotations

import json
import time
from typing import Any

from core.ids import new_id
from gateway.errors import invalid
from providers.base import Delta, ReasoningBlock, ReasoningDelta, StepEnd, TextDelta, ToolCallDelta

# Request fields copied to the chat body as they are (same name, same meaning).
_SAME = ("model", "temperature", "top_p", "parallel_tool_calls", "stream")


def chat_body(body: Any) -> dict[str, Any]:
    """A Responses request as the Chat Completions body that asks the same; 400 naming a field otherwise.
    Fields that do not change the answer (`store`, `metadata`, `user`, `include`, `truncation`…) are
    not carried over."""
    if not isinstance(body, dict):
        raise invalid("The request body must be a JSON object.")
    if body.get("previous_response_id") is not None:
        raise invalid("previous_response_id is not supported: this server stores no responses (store is off). "
                      "Send the whole conversation in `input`.", param="previous_response_id")
    if body.get("conversation") is not None:
        raise invalid("conversation is not supported: send the whole conversation in `input`.", param="conversation")
    chat: dict[str, Any] = {name: body[name] for name in _SAME if body.get(name) is not None}
    messages = []
    if body.get("instructions") is not None:
        if not isinstance(body["instructions"], str):
            raise invalid("instructions must be a string.", param="instructions")
        messages.append({"role": "system", "content": body["instructions"]})
    messages += _input_messages(body.get("input"))
    chat["messages"] = messages
    if body.get("max_output_tokens") is not None:
        chat["max_completion_tokens"] = body["max_output_tokens"]
    if body.get("tools"):
        chat["tools"] = _tools(body["tools"])
    if body.get("tool_choice") is not None:
        chat["tool_choice"] = _tool_choice(body["tool_choice"])
    text_format = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
    if isinstance(text_format, dict) and text_format.get("type") == "json_schema":
        chat["response_format"] = {"type": "json_schema", "json_schema": {
            k: text_format[k] for k in ("name", "schema", "strict", "description") if k in text_format}}
    elif isinstance(text_format, dict):
        chat["response_format"] = {"type": text_format.get("type")}
    effort = (body.get("reasoning") or {}).get("effort") if isinstance(body.get("reasoning"), dict) else None
    if effort is not None:
        chat["reasoning_effort"] = effort
    return chat


def _input_messages(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if not isinstance(value, list) or not value:
        raise invalid("input must be a string or a non-empty array of items.", param="input")
    messages: list[dict[str, Any]] = []
    for index, item in enumerate(value):
        where = f"input[{index}]"
        kind = item.get("type", "message") if isinstance(item, dict) else None
        if kind == "message":
            messages.append({"role": item.get("role"), "content": _text(item.get("content"), f"{where}.content")})
        elif kind == "function_call":
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments") or "{}"}}
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"),
                             "content": output if isinstance(output, str) else _text(output, f"{where}.output")})
        elif kind == "reasoning":
            continue  # the model's own earlier reasoning: not sent back to a vendor
        else:
            raise invalid(f"{where}: only message, function_call and function_call_output items are supported.",
                          param=where)
    return messages


def _text(content: Any, where: str) -> str:
    """A message's content (a string or input_text/output_text parts) as text; other parts refused."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise invalid(f"{where} must be a string or an array of content parts.", param=where)
    texts = []
    for index, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") not in ("input_text", "output_text", "text") \
                or not isinstance(part.get("text"), str):
            raise invalid(f"{where}[{index}]: only text parts are supported.", param=f"{where}[{index}]")
        texts.append(part["text"])
    return "".join(texts)


def _tools(tools: Any) -> list[dict[str, Any]]:
    if not isinstance(tools, list):
        raise invalid("tools must be an array.", param="tools")
    out = []
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise invalid(f"tools[{index}]: only function tools are supported.", param=f"tools[{index}]")
        function = {k: tool[k] for k in ("name", "description", "parameters") if tool.get(k) is not None}
        out.append({"type": "function", "function": function})
    return out


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, dict) and choice.get("type") == "function":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return choice


def response_usage(usage: dict[str, int] | None) -> dict[str, Any]:
    usage = usage or {}
    prompt, completion = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
    return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": prompt + completion}


class ResponseFold:
    """Folds one answer's deltas into Responses output items: `feed` returns the stream's events for a
    delta (each `{type, sequence_number, …}`), `response()` the `response` object as it stands."""

    def __init__(self, *, model: str, request: dict[str, Any]):
        self.id = new_id("resp")
        self.created_at = int(time.time())
        self.model = model
        self.request = request
        self.status = "in_progress"
        self.items: list[dict[str, Any]] = []
        self._text: dict[str, list[str]] = {}  # message item id -> its text fragments
        self._arguments: dict[str, list[str]] = {}  # function call item id -> its argument fragments
        self._open_message: dict[str, Any] | None = None
        self._calls: dict[int, dict[str, Any]] = {}  # the provider's call index -> its item
        self._sequence = 0
        self.end: StepEnd | None = None

    def opening(self) -> list[dict[str, Any]]:
        return [self._event("response.created", response=self.response()),
                self._event("response.in_progress", response=self.response())]

    def feed(self, delta: Delta) -> list[dict[str, Any]]:
        if isinstance(delta, TextDelta):
            return self._text_delta(delta.text) if delta.text else []
        if isinstance(delta, ToolCallDelta):
            return self._call_delta(delta)
        if isinstance(delta, StepEnd):
            return self._finish(delta)
        if isinstance(delta, (ReasoningDelta, ReasoningBlock)):
            return []  # reasoning is the vendor's; the Responses caller gets the answer and its usage
        raise TypeError(f"unexpected delta {delta!r}")

    def _text_delta(self, text: str) -> list[dict[str, Any]]:
        events = []
        if self._open_message is None:
            item = {"id": new_id("msg"), "type": "message", "status": "in_progress", "role": "assistant", "content": []}
            self._open_message = item
            self.items.append(item)
            self._text[item["id"]] = []
            events.append(self._event("response.output_item.added", output_index=len(self.items) - 1, item=dict(item)))
            events.append(self._event("response.content_part.added", item_id=item["id"],
                                      output_index=len(self.items) - 1, content_index=0,
                                      part={"type": "output_text", "text": "", "annotations": []}))
        item = self._open_message
        self._text[item["id"]].append(text)
        events.append(self._event("response.output_text.delta", item_id=item["id"],
                                  output_index=self.items.index(item), content_index=0, delta=text, logprobs=[]))
        return events

    def _call_delta(self, delta: ToolCallDelta) -> list[dict[str, Any]]:
        events = []
        item = self._calls.get(delta.index)
        if item is None:
            item = {"id": new_id("fc"), "type": "function_call", "status": "in_progress",
                    "call_id": delta.id or new_id("call"), "name": delta.name or "", "arguments": ""}
            self._calls[delta.index] = item
            self.items.append(item)
            self._arguments[item["id"]] = []
            events.append(self._event("response.output_item.added", output_index=len(self.items) - 1, item=dict(item)))
        if delta.arguments:
            self._arguments[item["id"]].append(delta.arguments)
            events.append(self._event("response.function_call_arguments.delta", item_id=item["id"],
                                      output_index=self.items.index(item), delta=delta.arguments))
        return events

    def _finish(self, end: StepEnd) -> list[dict[str, Any]]:
        self.end = end
        events = []
        for index, item in enumerate(self.items):
            if item["type"] == "message":
                text = "".join(self._text[item["id"]])
                part = {"type": "output_text", "text": text, "annotations": []}
                item["content"] = [part]
                events.append(self._event("response.output_text.done", item_id=item["id"], output_index=index,
                                          content_index=0, text=text, logprobs=[]))
                events.append(self._event("response.content_part.done", item_id=item["id"], output_index=index,
                                          content_index=0, part=part))
            else:
                item["arguments"] = "".join(self._arguments[item["id"]]) or "{}"
                events.append(self._event("response.function_call_arguments.done", item_id=item["id"],
                                          output_index=index, arguments=item["arguments"], name=item["name"]))
            item["status"] = "completed"
            events.append(self._event("response.output_item.done", output_index=index, item=item))
        self.status = "incomplete" if end.finish_reason == "length" else "completed"
        name = "response.incomplete" if self.status == "incomplete" else "response.completed"
        events.append(self._event(name, response=self.response()))
        return events

    def failed(self, code: str, message: str) -> list[dict[str, Any]]:
        """The events that end a stream whose model failed: `error`, then `response.failed`."""
        self.status = "failed"
        return [self._event("error", code=code, message=message, param=None),
                self._event("response.failed", response={**self.response(), "error": {"code": code, "message": message}})]

    def response(self) -> dict[str, Any]:
        request = self.request
        return {
            "id": self.id, "object": "response", "created_at": self.created_at, "model": self.model,
            "status": self.status, "output": [dict(item) for item in self.items],
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if self.status == "incomplete" else None,
            "instructions": request.get("instructions"), "metadata": request.get("metadata") or {},
            "tools": request.get("tools") or [], "tool_choice": request.get("tool_choice") or "auto",
            "parallel_tool_calls": request.get("parallel_tool_calls", True),
            "temperature": request.get("temperature"), "top_p": request.get("top_p"),
            "max_output_tokens": request.get("max_output_tokens"), "previous_response_id": None,
            "reasoning": request.get("reasoning"), "text": request.get("text") or {"format": {"type": "text"}},
            "store": False, "truncation": "disabled",
            "usage": response_usage(self.end.usage) if self.end is not None else None,
        }

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return event


def event_line(event: dict[str, Any]) -> bytes:
    """One Responses stream event as SSE: named by its type, as OpenAI sends it."""
    return b"event: %s\ndata: %s\n\n" % (event["type"].encode(), json.dumps(event, separators=(",", ":")).encode())
