"""A thread as a conversation, for the admin's thread page: messages grouped by the run that wrote
them, each block in a shape a template can show (text, tool call with its result, component with
its props, reasoning, resource), tool results joined to the call they answer.

Pure: rows in, plain dicts out. Run facts (model, tokens, times) come from the caller, which knows
runs; this module does not.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Iterable

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
        elif kind == "resource":
            name = _resource(block).get("name")
            parts.append(f"[{'image' if _is_image(block) else 'file'}{' ' + name if name else ''}]")
    text = " ".join(" ".join(parts).split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _resource(block: dict) -> dict:
    resource = block.get("resource")
    return resource if isinstance(resource, dict) else {}


def _is_image(block: dict) -> bool:
    return str(_resource(block).get("mimeType") or "").startswith("image/")


def resource_item(block: dict, index: int, part_url: Callable[[int], str] | None) -> dict:
    """A resource part as the admin shows it: its name, type and size, and where to get its bytes
    (`part_url(index)`, the admin's staff-only view) when it holds a blob; never the blob."""
    resource = _resource(block)
    blob = resource.get("blob")
    item = {"kind": "resource", "name": resource.get("name") or resource.get("uri") or f"part {index}",
            "mime": resource.get("mimeType") or "", "uri": resource.get("uri") or "", "url": None, "size": None,
            "is_image": _is_image(block), "text": resource.get("text")}
    if isinstance(blob, str) and part_url is not None:
        item["url"] = part_url(index)
        item["size"] = len(blob) * 3 // 4 - blob[-2:].count("=")  # decoded bytes, without decoding
    return item


def content_without_blobs(content: list[dict]) -> list[dict]:
    """The blocks with each resource's blob replaced by its size: what a JSON view of a message shows."""
    shown = []
    for block in content:
        resource = _resource(block)
        if isinstance(resource.get("blob"), str):
            blob = resource["blob"]
            block = {**block, "resource": {**resource, "blob": f"<{len(blob) * 3 // 4 - blob[-2:].count('=')} bytes>"}}
        shown.append(block)
    return shown


def _result_text(block: dict) -> str:
    return " ".join(part.get("text", "") for part in block.get("content") or [] if isinstance(part, dict))


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def conversation_build(messages: Iterable[Message], runs: dict[str, dict] | None = None,
                       part_url: Callable[[str, int], str] | None = None) -> list[dict]:
    """Groups `messages` (in time order) by run: `[{"run": facts or None, "items": [...]}]`.

    `runs` maps a run id to the facts its header shows; a run with facts but no message (one that
    failed before it wrote anything) still gets its group, in time order by its `created_at`.
    `part_url(message id, index)` is where a stored file's bytes are served.
    """
    messages = list(messages)
    results = {m.tool_call_id: m for m in messages if m.role == Message.Role.TOOL and m.tool_call_id}
    answered: set[str] = set()
    groups: list[dict] = []
    for message in messages:
        if message.role == Message.Role.TOOL and message.tool_call_id in answered:
            continue  # shown with its call
        url = (lambda index, message_id=message.id: part_url(message_id, index)) if part_url else None
        item = _item(message, results, answered, url)
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


def _item(message: Message, results: dict[str, Message], answered: set[str],
          part_url: Callable[[int], str] | None = None) -> dict:
    blocks = []
    for index, block in enumerate(message_content(message)):
        kind = block.get("type")
        if kind == "resource":
            blocks.append(resource_item(block, index, part_url))
        elif kind == "tool_use":
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
