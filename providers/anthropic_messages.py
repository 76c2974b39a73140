"""The interface's OpenAI-form request → the keyword arguments of Anthropic's `messages.create`.

Pure (no I/O), so every rule is easy to test alone:
- the leading system messages become `system`; a system message later in the conversation (context
  the application attached) becomes a user text block where it stood, as Messages has no such role;
- a tool message becomes a `tool_result` block of a user turn; consecutive turns of one role merge
  (the Messages API wants user and assistant to alternate);
- image parts become `image` blocks (base64 from a data URL, else a URL source), file parts
  `document` blocks; an assistant's tool calls `tool_use` blocks with their parsed input;
- an assistant turn's `thinking_blocks` (Anthropic's signed thinking and redacted thinking, stored
  with the message) open its content unmodified: with thinking on, the API refuses a tool result
  whose calling turn does not start with them;
- tools map to `input_schema`, tool_choice to auto/any/none/tool; `max_tokens` is required by the
  API, so a request without one asks for DEFAULT_MAX_TOKENS;
- parameters under Chat Completions' names (the gateway's, providers/parameters.py) take the
  Messages API's: `stop` → `stop_sequences`, a `response_format` JSON schema → structured output
  (`output_config.format`), `reasoning_effort` → a thinking budget (added to `max_tokens`, which
  must exceed it), `parallel_tool_calls: false` → `tool_choice.disable_parallel_tool_use`.
"""
from __future__ import annotations

import json
from typing import Any

from providers.base import ModelRequest, ModelTool
from providers.parameters import THINKING_BUDGETS

DEFAULT_MAX_TOKENS = 4096
# Parameters the SDK's `create` names go as arguments; the others (temperature, top_p, top_k: recent
# SDK releases dropped them from the signature while the API still takes them) go in `extra_body`.
_NAMED = ("stop_sequences", "thinking", "metadata", "service_tier", "output_config")


def messages_params(request: ModelRequest, *, default_model: str) -> dict[str, Any]:
    system, messages = _conversation(request.messages)
    params: dict[str, Any] = {"model": request.model or default_model, "messages": messages,
                              "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS}
    if system:
        params["system"] = system
    extra = dict(request.parameters)
    if request.temperature is not None:
        extra["temperature"] = request.temperature
    single_tool_call = extra.pop("parallel_tool_calls", None) is False
    _chat_completions_names(extra, params)
    for name in _NAMED:
        if name in extra:
            params[name] = extra.pop(name)
    if extra:
        params["extra_body"] = extra  # parameters the SDK does not name yet go through as given
    last = messages[-1] if messages else None
    if "thinking" in params and last and last["role"] == "assistant" and \
            last["content"][0].get("type") not in ("thinking", "redacted_thinking"):
        # A text to continue (a run taken over: runs/carry.py): with thinking on the API refuses a last
        # assistant turn that does not open with thinking, so the model answers anew (the run drops
        # what repeats the text seen).
        params["messages"] = messages[:-1]
    if request.tools:
        params["tools"] = [anthropic_tool(tool) for tool in request.tools]
        if request.tool_choice is not None:
            params["tool_choice"] = anthropic_tool_choice(request.tool_choice)
        if single_tool_call:
            params["tool_choice"] = {**params.get("tool_choice", {"type": "auto"}), "disable_parallel_tool_use": True}
    return params


def _chat_completions_names(extra: dict[str, Any], params: dict[str, Any]) -> None:
    """Moves the parameters named as Chat Completions names them to the Messages API's names, in place."""
    stop = extra.pop("stop", None)
    if stop is not None:
        extra["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    response_format = extra.pop("response_format", None)
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        schema = response_format["json_schema"]["schema"]
        extra["output_config"] = {**extra.get("output_config", {}), "format": {"type": "json_schema", "schema": schema}}
    effort = extra.pop("reasoning_effort", None)
    if effort in THINKING_BUDGETS:
        budget = THINKING_BUDGETS[effort]
        extra["thinking"] = {"type": "enabled", "budget_tokens": budget}
        params["max_tokens"] += budget


def anthropic_tool(tool: ModelTool) -> dict[str, Any]:
    schema = tool.parameters if tool.parameters.get("type") == "object" else {"type": "object", "properties": {}}
    return {"name": tool.name, "description": tool.description, "input_schema": schema}


def anthropic_tool_choice(choice: str | dict[str, Any]) -> dict[str, Any]:
    if choice == "auto":
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    if isinstance(choice, dict):
        name = choice.get("name") or (choice.get("function") or {}).get("name")
        if isinstance(name, str):
            return {"type": "tool", "name": name}
    raise ValueError(f"unsupported tool_choice: {choice!r}")


def _conversation(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "system" and not turns:
            system.append(_plain(message.get("content")))
            continue
        if role == "assistant":
            blocks = _assistant_blocks(message)
            role_out = "assistant"
        elif role == "tool":
            blocks = [{"type": "tool_result", "tool_use_id": message.get("tool_call_id") or "",
                       "content": _blocks(message.get("content")) or [{"type": "text", "text": "(empty)"}]}]
            role_out = "user"
        else:
            blocks = _blocks(message.get("content"))
            role_out = "user"
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role_out:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role_out, "content": blocks})
    if turns and turns[0]["role"] != "user":
        # Messages must open with a user turn; a history trimmed to an assistant turn gets one.
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": "(conversation continues)"}]})
    return "\n\n".join(s for s in system if s), turns


def _assistant_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = [block for block in map(_thinking, message.get("thinking_blocks") or ()) if block]
    blocks += _blocks(message.get("content"))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except json.JSONDecodeError:
            arguments = {}
        blocks.append({"type": "tool_use", "id": call.get("id") or "", "name": function.get("name") or "",
                       "input": arguments if isinstance(arguments, dict) else {}})
    return blocks


def _thinking(block: Any) -> dict[str, Any] | None:
    """A stored thinking block with only the fields the API takes, values untouched (the signature
    covers them byte for byte)."""
    if not isinstance(block, dict):
        return None
    if block.get("type") == "thinking" and isinstance(block.get("signature"), str):
        return {"type": "thinking", "thinking": block.get("thinking") or "", "signature": block["signature"]}
    if block.get("type") == "redacted_thinking" and isinstance(block.get("data"), str):
        return {"type": "redacted_thinking", "data": block["data"]}
    return None


def _plain(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content or () if isinstance(part, dict))


def _blocks(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content:
        block = _part(part) if isinstance(part, dict) else None
        if block is not None:
            blocks.append(block)
    return blocks


def _part(part: dict[str, Any]) -> dict[str, Any] | None:
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": part["text"]} if part.get("text") else None
    if kind == "image_url":
        url = (part.get("image_url") or {}).get("url") or ""
        return {"type": "image", "source": _source(url)}
    if kind == "file":
        data = (part.get("file") or {}).get("file_data") or ""
        source = _source(data)
        if source.get("media_type", "").startswith("text/"):
            return {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                                   "data": _decoded(source["data"])}}
        return {"type": "document", "source": source}
    return None


def _source(url: str) -> dict[str, Any]:
    """A data URL as a base64 source, anything else as a URL source."""
    if url.startswith("data:") and ";base64," in url:
        head, _, data = url.partition(";base64,")
        return {"type": "base64", "media_type": head[len("data:"):], "data": data}
    return {"type": "url", "url": url}


def _decoded(data: str) -> str:
    import base64

    return base64.b64decode(data).decode("utf-8", errors="replace")
