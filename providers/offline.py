"""The built-in offline model: deterministic, no network, honest about what it is.

It exists so that the server works with nothing configured and so that every path of the protocol
(text, client tool, server tool, component, error) can be reached by typing a message. Its rules,
applied in this order to the last message of the conversation (documented in docs/models.md):

a) the conversation ends with tool results → "Tool <name> returned: <result text>" for each ("Here is
   the <Component>." for a shown component);
b) the user's text starts with `!fail` → fails like a provider 5xx (LLM_SERVER_ERROR);
   `!slow` → streams a long answer slowly (to try Stop/cancel);
   `!stream N` → streams N one-word deltas with no delay (for benchmarks); `!stream N every S`: one
   every S seconds;
c) the user's text contains the exact name of offered tools (a component's name for a component)
   → calls each of them, in order of appearance, with the first JSON object in the text as
   arguments (a component without one gets its schema's defaults/examples);
d) otherwise → "(offline model) You said: <text>" and one sentence naming the offered tools and
   saying how to configure a real model.
"""
from __future__ import annotations

import asyncio
import json
import re
from typing import Any, AsyncIterator

from core.ids import new_id
from providers.base import (APP_CONTEXT_LABEL, Completion, Delta, ModelError, ModelRequest, ModelTool, StepEnd,
                            TextDelta, ToolCallDelta)
from providers.estimate import prompt_tokens, text_tokens
from providers.offline_tasks import task_answer

SLOW_WORDS = 200
_IMAGE_LABEL = re.compile(r"\[image: (.+)\]")  # runs/media.py puts one before a named image


COMPONENT_PREFIX = "show_component_"  # runs.history.component_tool_name; providers import no Django apps


class OfflineProvider:
    name = "offline"

    def __init__(self, *, delay: float = 0.02, slow_delay: float = 0.25):
        self.delay = delay
        self.slow_delay = slow_delay

    async def stream(self, request: ModelRequest) -> AsyncIterator[Delta]:
        # Context the application attaches (a system message, or a user turn of context alone after tool
        # results: runs/history.py) is not the user's words; the rules read what came before.
        conversation = [m for m in request.messages if m.get("role") != "system" and not _context_only(m)]
        if conversation and conversation[-1].get("role") == "assistant" and not conversation[-1].get("tool_calls"):
            # A text to continue (a run taken over: runs/carry.py): answered anew, as a model without
            # prefills does; the run drops what repeats the text.
            conversation = conversation[:-1]
        conversation = conversation or [{"role": "user", "content": ""}]
        last = conversation[-1]
        if last.get("role") == "tool":
            async for delta in self._text(request, _tool_report(conversation), self.delay):
                yield delta
            return
        text = _text_of(last)
        if text.lstrip().startswith("!fail"):
            await asyncio.sleep(self.delay)
            raise ModelError("LLM_SERVER_ERROR", "The model provider failed (the offline model's !fail rule).",
                             retryable=True, status=500)
        if text.lstrip().startswith("!slow"):
            words = " ".join(f"word{i}" for i in range(SLOW_WORDS))
            async for delta in self._text(request, f"(offline model) A slow answer: {words}.", self.slow_delay, size=6):
                yield delta
            return
        bench = re.match(r"\s*!stream\s+(\d+)(?:\s+every\s+(\d+(?:\.\d+)?))?", text)
        if bench:
            pace = min(float(bench.group(2) or 0), 60.0)  # `every S`: a paced stream (bench/cluster.py)
            for i in range(min(int(bench.group(1)), 100_000)):
                if pace:
                    await asyncio.sleep(pace)
                yield TextDelta(f"w{i} ")
            yield StepEnd("stop", _usage(request, int(bench.group(1))))
            return
        calls = [] if request.tool_choice == "none" else _named_tools(text, request.tools)
        if calls:
            arguments = _first_json_object(text)
            for index, tool in enumerate(calls):
                args = arguments if arguments is not None else _schema_defaults(tool)
                encoded = json.dumps(args)
                # Split the arguments in pieces, as a real model streams them.
                pieces = [encoded[i:i + 8] for i in range(0, len(encoded), 8)] or ["{}"]
                for n, piece in enumerate(pieces):
                    await asyncio.sleep(self.delay)
                    yield ToolCallDelta(index=index, id=new_id("call") if n == 0 else None,
                                        name=tool.name if n == 0 else None, arguments=piece)
            yield StepEnd("tool_calls", _usage(request, 10))
            return
        async for delta in self._text(request, _echo(text, request.tools, _attachments(last)), self.delay):
            yield delta

    async def complete(self, request: ModelRequest) -> Completion:
        """A task's answer by the rules of providers/offline_tasks.py; else the streamed text, whole."""
        answer = task_answer(request.task) if request.task is not None else None
        if answer is not None:
            return Completion(text=answer, usage=_usage(request, text_tokens(answer)))
        parts, end = [], StepEnd("stop")
        async for delta in self.stream(ModelRequest(messages=request.messages, model=request.model)):
            if isinstance(delta, TextDelta):
                parts.append(delta.text)
            elif isinstance(delta, StepEnd):
                end = delta
        return Completion(text="".join(parts), finish_reason=end.finish_reason, usage=end.usage)

    async def _text(self, request: ModelRequest, text: str, delay: float, size: int = 12) -> AsyncIterator[Delta]:
        for i in range(0, len(text), size):
            if delay:
                await asyncio.sleep(delay)
            yield TextDelta(text[i:i + size])
        yield StepEnd("stop", _usage(request, text_tokens(text)))


def _usage(request: ModelRequest, completion: int) -> dict[str, int]:
    # No tokenizer: the prompt is estimated as the context budget estimates it (providers/estimate.py),
    # so usage pages and budgets count the offline model's runs too.
    prompt = prompt_tokens(request.messages)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, str):
        return content
    # The history's `[image: name]` labels are said back under "I received", not as the user's words.
    return "".join(part.get("text", "") for part in content
                   if isinstance(part, dict) and not _IMAGE_LABEL.fullmatch(part.get("text", ""))
                   and not part.get("text", "").startswith(APP_CONTEXT_LABEL))


def _context_only(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return (message.get("role") == "user" and isinstance(content, list) and bool(content)
            and all(str(part.get("text", "")).startswith(APP_CONTEXT_LABEL) for part in content))


def _tool_report(messages: list[dict[str, Any]]) -> str:
    """'Tool <name> returned: <text>' for the trailing run of tool messages."""
    names = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
    results = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        results.append(message)
    return "\n".join(_tool_line(names.get(m.get("tool_call_id"), "unknown"), m) for m in reversed(results))


def _tool_line(name: str, message: dict[str, Any]) -> str:
    # A component's result only says it is shown; a person reads "Here is the DataCard." better.
    if name.startswith(COMPONENT_PREFIX):
        return f"Here is the {name[len(COMPONENT_PREFIX):]}."
    return f"Tool {name} returned: {_text_of(message)}"


def _named_tools(text: str, tools: list[ModelTool]) -> list[ModelTool]:
    found = []
    for tool in tools:
        label = tool.display_name or tool.name
        match = re.search(rf"(?<![\w-]){re.escape(label)}(?![\w-])", text)
        if match:
            found.append((match.start(), tool))
    return [tool for _, tool in sorted(found, key=lambda pair: pair[0])]


def _first_json_object(text: str) -> dict[str, Any] | None:
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _schema_defaults(tool: ModelTool) -> dict[str, Any]:
    """Props from a schema's defaults or first examples (only components get these)."""
    if tool.display_name is None:
        return {}
    return _example(tool.parameters) or {}


def _example(schema: dict[str, Any]) -> Any:
    if not isinstance(schema, dict):
        return None
    if "default" in schema:
        return schema["default"]
    if schema.get("examples"):
        return schema["examples"][0]
    if schema.get("type") == "object" or "properties" in schema:
        values = {key: _example(sub) for key, sub in (schema.get("properties") or {}).items()}
        return {key: value for key, value in values.items() if value is not None}
    return None


def _attachments(message: dict[str, Any]) -> list[str]:
    """What the user attached, in words: 'image/png, 1234 bytes' (a URL for a linked image), the name
    first when the part has one (the text label before an image, a file's filename)."""
    content = message.get("content")
    if isinstance(content, str) or not content:
        return []
    found, label = [], None
    for part in content:
        kind = part.get("type")
        if kind == "text":
            named = _IMAGE_LABEL.fullmatch(part.get("text", ""))
            label = named.group(1) if named else None
            continue
        if kind == "image_url":
            found.append(_described("image", label, part["image_url"]["url"]))
        elif kind == "file":
            found.append(_described("file", part["file"].get("filename"), part["file"].get("file_data", "")))
        label = None
    return found


def _described(kind: str, name: str | None, url: str) -> str:
    data = re.match(r"data:([^;,]+);base64,", url)
    if data is None:
        what = f"{kind} at {url}"
    else:
        encoded = len(url) - data.end()
        size = encoded * 3 // 4 - url[-2:].count("=")
        what = f"{kind} ({data.group(1)}, {size} bytes)"
    return f"{what.split(' ', 1)[0]} {name} {what.split(' ', 1)[1]}" if name else what


def _echo(text: str, tools: list[ModelTool], attachments: list[str] | None = None) -> str:
    if attachments:
        text = f"{text}\n\nI received: {'; '.join(attachments)}."
    if tools:
        names = ", ".join(tool.display_name or tool.name for tool in tools)
        offered = f"I was offered these tools: {names}; name one in your message to call it."
    else:
        offered = "I was offered no tools."
    return (
        f"(offline model) You said: {text}\n\n{offered} This is the built-in offline model, not an AI: "
        "set OPENAI_API_KEY (and optionally OPENAI_BASE_URL and OPENAI_MODEL) to use a real model."
    )
