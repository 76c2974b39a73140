"""The thread's stored messages → the model's input (OpenAI chat form).

Rebuilt from the database at the start of every run, so the model always sees the current state of
each component and every tool result, including those that arrived through continuations.
"""
from __future__ import annotations

import json
from typing import Any

from providers.base import APP_CONTEXT_LABEL
from runs.media import content_parts
from threads.content import block_text
from threads.models import Message

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant inside an application. Use the tools you are offered when they help; "
    "tools named show_component_<Name> render a UI component for the user with the arguments as its props."
)


def component_tool_name(component_name: str) -> str:
    return f"show_component_{component_name}"


def result_text(result_block: dict[str, Any]) -> str:
    text = "\n".join(block_text(b) for b in result_block.get("content") or []).strip()
    if result_block.get("isError"):
        return f"Error: {text}" if text else "Error"
    return text


def build_model_messages(system_prompt: str, messages: list[Message], *,
                         allow_override: bool = False) -> list[dict[str, Any]]:
    """The model's input: the project's instructions, then the thread. A stored system message reaches
    the model only when the project allows system prompt overrides (`allowSystemPromptOverride`); then
    a thread's first message, when it is one, replaces the project's instructions (as on the reference).
    Without the setting, system messages a client stored (through AG-UI, or before /v1 refused them)
    never reach the model: anyone with the public key could otherwise add instructions. For the same
    reason a message's `additionalContext` (AG-UI `context` and `state` included) reaches the model
    inside the user turn, labelled as the application's data (APP_CONTEXT_LABEL), and as a system
    message only when the project allows overrides."""
    if allow_override and messages and messages[0].role == Message.Role.SYSTEM:
        system_prompt = "\n".join(block_text(b) for b in messages[0].content) or system_prompt
        messages = messages[1:]
    out: list[dict[str, Any]] = [{"role": "system", "content": system_prompt or DEFAULT_SYSTEM_PROMPT}]
    answered: set[str] = {m.tool_call_id for m in messages if m.role == Message.Role.TOOL and m.tool_call_id}
    for message in messages:
        if message.role == Message.Role.SYSTEM and not allow_override:
            continue
        if message.role == Message.Role.TOOL:
            for block in message.content:
                if block.get("type") == "tool_result":
                    out.append({"role": "tool", "tool_call_id": block["toolUseId"], "content": result_text(block)})
            if message.additional_context:
                # The results came in a user turn of the client's: its context follows them as one.
                out.append(_context_system(message.additional_context) if allow_override
                           else {"role": "user", "content": [_context_part(message.additional_context)]})
        elif message.role == Message.Role.ASSISTANT:
            out.extend(_assistant(message, answered))
        else:
            out.extend(_user_or_system(message, allow_override))
    return out


def _user_or_system(message: Message, allow_override: bool) -> list[dict[str, Any]]:
    result = []
    context = message.additional_context
    if context and (allow_override or message.role != Message.Role.USER):
        result.append(_context_system(context))
        context = None
    if message.role == Message.Role.USER:
        parts = content_parts(message.content)
        if context:
            # Context from the application (what the user sees, selections…), just before the text.
            parts = [_context_part(context), *parts]
        if context or any(part["type"] != "text" for part in parts):
            result.append({"role": message.role, "content": parts})
            return result
        text = "\n".join(part["text"] for part in parts)
    else:
        text = "\n".join(block_text(b) for b in message.content if b.get("type") in ("text", "resource"))
    if text:
        result.append({"role": message.role, "content": text})
    return result


def _context_part(context: Any) -> dict[str, Any]:
    return {"type": "text", "text": f"{APP_CONTEXT_LABEL}\n{json.dumps(context, ensure_ascii=False)}"}


def _context_system(context: Any) -> dict[str, Any]:
    """Only where the project allows clients to set instructions (allowSystemPromptOverride)."""
    return {"role": "system",
            "content": f"Additional context from the application: {json.dumps(context, ensure_ascii=False)}"}


def _assistant(message: Message, answered: set[str]) -> list[dict[str, Any]]:
    text = "".join(b.get("text", "") for b in message.content if b.get("type") == "text")
    calls, synthetic = [], []
    for block in message.content:
        if block.get("type") == "tool_use" and block["id"] in answered:
            calls.append(_call(block["id"], block["name"], block.get("input") or {}))
        elif block.get("type") == "component":
            # A component is a tool call whose result is what the user now sees, state included.
            call_id = block.get("toolCallId") or block["id"]
            calls.append(_call(call_id, component_tool_name(block["name"]), block.get("props") or {}))
            if call_id not in answered:
                state = message.component_state.get(block["id"], block.get("state") or {})
                synthetic.append({"role": "tool", "tool_call_id": call_id,
                                  "content": component_result_text(block["name"], block["id"], state)})
    if not text and not calls:
        return []
    entry: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        entry["tool_calls"] = calls
        # Only a turn that called tools needs its signed thinking back (Anthropic strips it from
        # other past turns anyway), so a text answer's reasoning costs nothing on later calls.
        if message.reasoning_blocks:
            entry["thinking_blocks"] = message.reasoning_blocks
    return [entry, *synthetic]


def component_result_text(name: str, component_id: str, state: dict[str, Any]) -> str:
    return (f"Component {name} ({component_id}) is shown to the user. "
            f"Its current state: {json.dumps(state, ensure_ascii=False)}")


def _call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}
