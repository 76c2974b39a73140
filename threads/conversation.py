"""A thread as a conversation, for the admin's thread page: messages grouped by the run that wrote
them, each block in a shape a template can show (text, tool call with its result, component with
its props, reasoning, resource), tool results joined to the call they answer.

Pure: rows in, plain dicts out. Run facts (model, tokens, times) come from the caller, which knows
runs; this module does not.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from threads.models import Message
from threads.presenters import message_content

PREVIEW_CHARS = 120


def message_preview(message: Message, limit: int = PREVIEW_CHARS) -> str:
    """The message's text in one line, cut at `limit` characters, for list tables."""
    parts: list[str] = []
    for block in message.content or []:
        kind = block.get("type")
        if kind == "text":
            parts.append(block.get("text") or "")
        elif kind == "tool_use":
            parts.append(f"[tool call {block.get('name')}]")
        elif kind == "tool_result":
            parts.append("[tool result] " + _result_text(block))
        elif kind == "component":
            parts.append(f"[component {block.get('name')}]")
        elif kind == "reasoning":
            parts.append("[reasoning]")
    text = " ".join(" ".join(parts).split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _result_text(block: dict) -> str:
    return " ".join(part.get("text", "") for part in block.get("content") or [] if isinstance(part, dict))


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def conversation_build(messages: Iterable[Message], runs: dict[str, dict] | None = None) -> list[dict]:
    """Groups `messages` (in time order) by run: `[{"run": facts or None, "items": [...]}]`.

    `runs` maps a run id to the facts its header shows; a run with facts but no message (one that
    failed before it wrote anything) still gets its group, in time order by its `created_at`.
    """
    messages = list(messages)
    results = {m.tool_call_id: m for m in messages if m.role == Message.Role.TOOL and m.tool_call_id}
    answered: set[str] = set()
    groups: list[dict] = []
    for message in messages:
        if message.role == Message.Role.TOOL and message.tool_call_id in answered:
            continue  # shown with its call
        item = _item(message, results, answered)
        run_id = message.run_id
        if not groups or groups[-1]["run_id"] != run_id:
            groups.append({"run_id": run_id, "run": (runs or {}).get(run_id), "items": [], "at": message.created_at})
        groups[-1]["items"].append(item)
    shown = {g["run_id"] for g in groups}
    for run_id, facts in (runs or {}).items():
        if run_id not in shown and facts.get("created_at") is not None:
            groups.append({"run_id": run_id, "run": facts, "items": [], "at": facts["created_at"]})
    groups.sort(key=lambda g: g["at"])
    return groups


def _item(message: Message, results: dict[str, Message], answered: set[str]) -> dict:
    blocks = []
    for block in message_content(message):
        kind = block.get("type")
        if kind == "tool_use":
            result = results.get(block.get("id"))
            if result is not None:
                answered.add(block.get("id"))
            blocks.append({"kind": "tool_use", "name": block.get("name"), "id": block.get("id"),
                           "arguments": _json(block.get("input") or {}),
                           "result": _tool_result(result), "pending": result is None})
        elif kind == "tool_result":
            blocks.append({"kind": "tool_result", "id": block.get("toolUseId"), "text": _result_text(block),
                           "is_error": bool(block.get("isError"))})
        elif kind == "component":
            blocks.append({"kind": "component", "name": block.get("name"), "id": block.get("id"),
                           "props": _json(block.get("props") or {}), "state": block.get("state") or None,
                           "state_json": _json(block.get("state") or {})})
        elif kind == "reasoning":
            blocks.append({"kind": "reasoning", "text": block.get("text") or block.get("reasoning") or ""})
        elif kind == "text":
            blocks.append({"kind": "text", "text": block.get("text") or ""})
        else:
            blocks.append({"kind": "other", "type": kind, "json": _json(block)})
    return {"id": message.id, "role": message.role, "cancelled": message.is_cancelled, "blocks": blocks,
            "external_id": message.external_id, "created_at": message.created_at}


def _tool_result(message: Message | None) -> dict | None:
    if message is None:
        return None
    block = next((b for b in message.content or [] if b.get("type") == "tool_result"), {})
    return {"text": _result_text(block), "is_error": bool(block.get("isError")), "message_id": message.id}
