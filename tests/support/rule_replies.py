"""The offline model's rules (docs/models.md) as a fake vendor's answers, read off the wire.

The React app test drives a conversation whose every answer is decided by those rules (an echo, a
client tool named in the text, a component, the thread's name, the suggestions). Run on a project
whose model is the Anthropic fake, the fake answers each Messages request by the same rules:
`anthropic_reply(body)` turns the request back into the interface's form, asks the offline model
itself, and gives its answer as the fake's `Text` or `ToolCalls`. So the app sees the same
conversation while every model call crosses the Anthropic wire (messages, tool_use, tool_result).
`openai_reply(body)` does the same for a Chat Completions request: the React app on an agent project
(tests/browser/test_react_app_agents.py) has the agent's own model, the OpenAI fake, answer so.
"""
from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from providers.base import APP_CONTEXT_LABEL, ModelRequest, ModelTool, StepEnd, TextDelta, ToolCallDelta
from providers.offline import OfflineProvider
from providers.offline_tasks import cut_at_word, offline_suggestions
from runs.history import component_tool_name
from tests.support.fake_openai import Text, ToolCall, ToolCalls

CONTEXT = APP_CONTEXT_LABEL
COMPONENT_PREFIX = component_tool_name("")


def anthropic_reply(body: dict[str, Any]) -> Text | ToolCalls:
    system = body.get("system") or ""
    if isinstance(system, list):
        system = "\n".join(block.get("text", "") for block in system)
    if system.startswith("You name conversations"):
        return Text(_thread_name(body))
    if system.startswith("You suggest what the user"):
        return Text(json.dumps({"suggestions": offline_suggestions(_suggestion_facts(system))}))
    request = ModelRequest(messages=_messages(body), tools=[_tool(t) for t in body.get("tools") or ()])
    return asyncio.run(_offline_answer(request))


def openai_reply(body: dict[str, Any]) -> Text | ToolCalls:
    messages = [{**m, "content": _openai_text(m.get("content"))} for m in body.get("messages") or ()]
    conversation = [m for m in messages if m.get("role") != "system"]
    last = conversation[-1]["content"] if conversation else ""
    # Through an agent a side task's instructions start its user turn (providers/agent_provider.py
    # `instructions_inline`), after the agent's own system prompt.
    if "You name conversations" in last:
        first = re.search(r"^User: (.*)$", last, re.MULTILINE)
        return Text(cut_at_word(first.group(1) if first else "", 40))
    if "You suggest what the user" in last:
        return Text(json.dumps({"suggestions": offline_suggestions(_suggestion_facts(last))}))
    tools = [_tool({"name": t["function"]["name"], "description": t["function"].get("description"),
                    "input_schema": t["function"].get("parameters")}) for t in body.get("tools") or ()]
    return asyncio.run(_offline_answer(ModelRequest(messages=messages, tools=tools)))


def _openai_text(content: Any) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


async def _offline_answer(request: ModelRequest) -> Text | ToolCalls:
    text: list[str] = []
    calls: dict[int, list[Any]] = {}
    async for delta in OfflineProvider(delay=0).stream(request):
        if isinstance(delta, TextDelta):
            text.append(delta.text)
        elif isinstance(delta, ToolCallDelta):
            call = calls.setdefault(delta.index, [delta.id, delta.name, []])
            call[2].append(delta.arguments)
        elif isinstance(delta, StepEnd) and calls:
            return ToolCalls([ToolCall(name, arguments, id=f"toolu_{call_id}") for call_id, name, arguments
                              in calls.values()], text=text)
    return Text(text or ["(empty)"])


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The Messages conversation in the interface's OpenAI form (providers/base.py)."""
    out: list[dict[str, Any]] = []
    for turn in body.get("messages") or ():
        content = turn.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        if turn.get("role") == "assistant":
            text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            calls = [{"id": b["id"], "type": "function",
                      "function": {"name": b["name"], "arguments": json.dumps(b.get("input") or {})}}
                     for b in blocks if b.get("type") == "tool_use"]
            out.append({"role": "assistant", "content": text or None, **({"tool_calls": calls} if calls else {})})
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                result = block.get("content")
                text = result if isinstance(result, str) else "".join(b.get("text", "") for b in result or ())
                out.append({"role": "tool", "tool_call_id": block.get("tool_use_id"), "content": text})
            elif block.get("type") == "text":
                role = "system" if block["text"].startswith(CONTEXT) else "user"
                out.append({"role": role, "content": block["text"]})
    return out


def _tool(tool: dict[str, Any]) -> ModelTool:
    name = tool["name"]
    # The offline model matches a component by its own name (WeatherCard), not its tool's.
    display = name[len(COMPONENT_PREFIX):] if name.startswith(COMPONENT_PREFIX) else None
    return ModelTool(name=name, description=tool.get("description") or "",
                     parameters=tool.get("input_schema") or {}, display_name=display)


def _user_text(body: dict[str, Any]) -> str:
    content = (body.get("messages") or [{}])[-1].get("content")
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content or ())


def _thread_name(body: dict[str, Any]) -> str:
    first = re.search(r"^User: (.*)$", _user_text(body), re.MULTILINE)
    return cut_at_word(first.group(1) if first else "", 40)


def _suggestion_facts(system: str) -> dict[str, Any]:
    most = re.search(r"at most (\d+) suggestions", system)
    components = [{"name": name, "description": description}
                  for name, description in re.findall(r"^- ([A-Za-z0-9_-]+): (.*)$", system, re.MULTILINE)]
    return {"components": components, "maxSuggestions": int(most.group(1)) if most else 3}
