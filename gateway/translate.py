"""An OpenAI Chat Completions request body → the provider-neutral `ModelRequest`.

Front ends such as TinyRobot send their UI state along with each message (`loading`, `state`,
`metadata`, `tool_calls[].index`, `reasoning_content`, `refusal`, ...). Those fields are tolerated
and dropped here: every message is rebuilt from the fields the vendor needs, so nothing unknown
ever reaches the vendor. The parameters that change the answer (`response_format`, `stop`, `top_p`,
`seed`, penalties, `parallel_tool_calls`, `reasoning_effort`: providers/parameters.py) are checked
here and forwarded under their OpenAI names; the view refuses one the answering provider cannot
honour. Fields that do not change the answer (`user`, `metadata`, `store`...) are ignored.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gateway.errors import invalid
from providers.base import ModelRequest, ModelTool
from providers.parameters import THINKING_BUDGETS

ROLES = ("system", "developer", "user", "assistant", "tool")
TOOL_CHOICE_WORDS = ("auto", "required", "none")
EMPTY_PARAMETERS = {"type": "object", "properties": {}}


@dataclass
class ChatRequest:
    model: str | None
    messages: list[dict[str, Any]]
    tools: list[ModelTool] = field(default_factory=list)
    tool_choice: str | dict[str, Any] | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stream: bool = False
    include_usage: bool = False
    # The forwarded parameters the caller sent, under OpenAI's names (providers/parameters.py).
    parameters: dict[str, Any] = field(default_factory=dict)

    def model_request(self, vendor_model: str | None) -> ModelRequest:
        return ModelRequest(messages=self.messages, tools=self.tools, tool_choice=self.tool_choice,
                            model=vendor_model, max_tokens=self.max_tokens, temperature=self.temperature,
                            parameters=dict(self.parameters))


def parse_chat_request(body: Any) -> ChatRequest:
    """Check a request body and translate it; raises a 400 GatewayError naming the bad `param`."""
    if not isinstance(body, dict):
        raise invalid("The request body must be a JSON object.")
    model = body.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise invalid("model must be a non-empty string.", param="model")
    if body.get("n") not in (None, 1):
        raise invalid("Only n=1 is supported.", param="n")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise invalid("messages must be a non-empty array.", param="messages")
    stream = _optional(body, "stream", bool) or False
    options = _optional(body, "stream_options", dict) or {}
    if options and not stream:
        raise invalid("stream_options is only allowed when stream is true.", param="stream_options")
    tools = _tools(body.get("tools"))
    return ChatRequest(
        model=model,
        messages=[_message(message, f"messages[{i}]") for i, message in enumerate(messages)],
        tools=tools,
        tool_choice=_tool_choice(body.get("tool_choice"), tools),
        temperature=_temperature(body.get("temperature")),
        max_tokens=_max_tokens(body),
        stream=stream,
        include_usage=bool(options.get("include_usage")),
        parameters=forwarded_parameters(body),
    )


def forwarded_parameters(body: dict) -> dict[str, Any]:
    """The answer-shaping parameters of `body`, checked; those equal to the default are left out (a
    `response_format` of `text`, `parallel_tool_calls: true`, `logprobs: false`, `top_p: 1`, penalties of 0),
    so no provider is
    refused a parameter that asks for nothing."""
    out: dict[str, Any] = {}
    if body.get("response_format") is not None:
        response_format = _response_format(body["response_format"])
        if response_format is not None:
            out["response_format"] = response_format
    if body.get("stop") is not None:
        out["stop"] = _stop(body["stop"])
    # Chat UIs often send every sampling field at its default (top_p 1, penalties 0): that asks for nothing.
    for name, low, high, default in (("top_p", 0, 1, 1), ("presence_penalty", -2, 2, 0),
                                     ("frequency_penalty", -2, 2, 0)):
        if body.get(name) is not None:
            value = _number(body[name], name, low, high)
            if value != default:
                out[name] = value
    if body.get("seed") is not None:
        if isinstance(body["seed"], bool) or not isinstance(body["seed"], int):
            raise invalid("seed must be an integer.", param="seed")
        out["seed"] = body["seed"]
    for name in ("parallel_tool_calls", "logprobs"):
        value = _optional(body, name, bool)
        if value is not None and value != (name == "parallel_tool_calls"):
            out[name] = value
    if body.get("top_logprobs") is not None:
        value = body["top_logprobs"]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 20:
            raise invalid("top_logprobs must be an integer from 0 to 20.", param="top_logprobs")
        out["top_logprobs"] = value
    if body.get("reasoning_effort") is not None:
        if body["reasoning_effort"] not in THINKING_BUDGETS:
            raise invalid(f"reasoning_effort must be one of {', '.join(THINKING_BUDGETS)}.", param="reasoning_effort")
        out["reasoning_effort"] = body["reasoning_effort"]
    return out


def _response_format(value: Any) -> dict[str, Any] | None:
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind != "json_schema":
        raise invalid("response_format.type must be text, json_object or json_schema.", param="response_format")
    spec = value.get("json_schema")
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or not isinstance(spec.get("schema"), dict):
        raise invalid("response_format.json_schema needs a name and a schema object.",
                      param="response_format.json_schema")
    kept = {k: spec[k] for k in ("name", "schema", "strict", "description") if k in spec}
    return {"type": "json_schema", "json_schema": kept}


def _stop(value: Any) -> list[str]:
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or not 1 <= len(stops) <= 4 or not all(isinstance(s, str) and s for s in stops):
        raise invalid("stop must be a non-empty string or an array of 1 to 4 of them.", param="stop")
    return stops


def _number(value: Any, name: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise invalid(f"{name} must be a number from {low} to {high}.", param=name)
    return float(value)


def _optional(body: dict, name: str, kind: type) -> Any:
    value = body.get(name)
    if value is not None and not isinstance(value, kind):
        raise invalid(f"{name} must be a {'boolean' if kind is bool else 'object'}.", param=name)
    return value


def _message(message: Any, where: str) -> dict[str, Any]:
    if not isinstance(message, dict):
        raise invalid(f"{where} must be an object.", param=where)
    role = message.get("role")
    if role not in ROLES:
        raise invalid(f"{where}.role must be one of {', '.join(ROLES)}.", param=f"{where}.role")
    content = _content(message.get("content"), f"{where}.content")
    if role == "tool":
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise invalid(f"{where}.tool_call_id is required for a tool message.", param=f"{where}.tool_call_id")
        return {"role": "tool", "tool_call_id": call_id, "content": content or ""}
    if role == "assistant":
        cleaned: dict[str, Any] = {"role": "assistant", "content": content}
        calls = [_tool_call(call, f"{where}.tool_calls[{i}]") for i, call in enumerate(message.get("tool_calls") or [])]
        if calls:
            cleaned["tool_calls"] = calls
        elif content is None:
            cleaned["content"] = ""
        return cleaned
    # `developer` is OpenAI's newer name for `system`; many OpenAI-compatible servers know only `system`.
    cleaned = {"role": "system" if role == "developer" else role, "content": content or ""}
    if isinstance(message.get("name"), str) and message["name"]:
        cleaned["name"] = message["name"]
    return cleaned


def _content(content: Any, where: str) -> str | None:
    """A string, or content parts flattened to their text; images and audio are refused."""
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise invalid(f"{where} must be a string or an array of content parts.", param=where)
    texts = []
    for i, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") not in ("text", "refusal"):
            raise invalid(f"{where}[{i}]: only text content parts are supported.", param=f"{where}[{i}]")
        value = part.get("text") if part["type"] == "text" else part.get("refusal")
        if not isinstance(value, str):
            raise invalid(f"{where}[{i}] has no text.", param=f"{where}[{i}]")
        texts.append(value)
    return "".join(texts)


def _tool_call(call: Any, where: str) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(call.get("id"), str) or not isinstance(function.get("name"), str):
        raise invalid(f"{where} needs an id and a function name.", param=where)
    arguments = function.get("arguments")
    if arguments is None:
        arguments = "{}"
    elif not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return {"id": call["id"], "type": "function", "function": {"name": function["name"], "arguments": arguments}}


def _tools(tools: Any) -> list[ModelTool]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise invalid("tools must be an array.", param="tools")
    result = []
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type", "function") != "function" or not isinstance(function, dict):
            raise invalid(f"tools[{i}] must be {{type: 'function', function: {{...}}}}.", param=f"tools[{i}]")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise invalid(f"tools[{i}].function.name is required.", param=f"tools[{i}].function.name")
        parameters = function.get("parameters") or EMPTY_PARAMETERS
        if not isinstance(parameters, dict):
            raise invalid(f"tools[{i}].function.parameters must be a JSON Schema object.",
                          param=f"tools[{i}].function.parameters")
        description = function.get("description")
        result.append(ModelTool(name=name, description=description if isinstance(description, str) else "",
                                parameters=parameters))
    return result


def _tool_choice(choice: Any, tools: list[ModelTool]) -> str | dict[str, Any] | None:
    if choice is None or choice in TOOL_CHOICE_WORDS:
        return choice
    function = choice.get("function") if isinstance(choice, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str):
        raise invalid("tool_choice must be auto, required, none or {type: 'function', function: {name}}.",
                      param="tool_choice")
    if name not in {tool.name for tool in tools}:
        raise invalid(f"tool_choice names {name[:100]!r}, which is not among the tools.", param="tool_choice")
    return {"name": name}


def _temperature(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 2:
        raise invalid("temperature must be a number from 0 to 2.", param="temperature")
    return float(value)


def _max_tokens(body: dict) -> int | None:
    # `max_completion_tokens` is OpenAI's newer name; it wins when both are sent.
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise invalid(f"{name} must be a positive integer.", param=name)
        return value
    return None
