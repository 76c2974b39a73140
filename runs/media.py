"""A user message's stored parts → the model's content parts (docs/images-and-voice.md).

The parts are in OpenAI chat form, the form of every provider's input (providers/base.py): an image
is an `image_url` part (its blob as a data URL, or its http(s) URL), a PDF a `file` part, a text or
JSON file a `text` part. A named image is preceded by a short text part with its name, so the model
can tell the user's files apart ("the second screenshot"). The parts were checked when the message
came in (core/content_parts.py); one stored before that check (or by another entry point) that is
not one of these is described in words instead of sent.
"""
from __future__ import annotations

import binascii
from typing import Any

from core.content_parts import IMAGE_TYPES, PDF, base_type, is_text_type


def content_parts(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "text":
            if block.get("text"):
                parts.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "resource":
            parts.extend(_resource_parts(block.get("resource") or {}))
    return parts


def _resource_parts(resource: dict[str, Any]) -> list[dict[str, Any]]:
    mime = base_type(resource.get("mimeType"))
    name = resource.get("name")
    blob = resource.get("blob")
    if blob and mime in IMAGE_TYPES:
        label = [{"type": "text", "text": f"[image: {name}]"}] if name else []
        return [*label, {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{blob}"}}]
    if blob and mime == PDF:
        return [{"type": "file", "file": {"filename": name or "document.pdf",
                                          "file_data": f"data:{PDF};base64,{blob}"}}]
    if blob and is_text_type(mime):
        try:
            text = binascii.a2b_base64(blob).decode("utf-8")
        except (binascii.Error, ValueError):
            text = None
        if text is not None:
            return [{"type": "text", "text": f"[file: {name or 'untitled'} ({mime})]\n{text}"}]
    if resource.get("text"):
        return [{"type": "text", "text": resource["text"]}]
    uri = resource.get("uri") or ""
    if not blob and uri.lower().startswith(("http://", "https://")) and (not mime or mime.startswith("image/")):
        return [{"type": "image_url", "image_url": {"url": uri}}]
    label = name or uri or "resource"
    return [{"type": "text", "text": f"[{label} ({mime or 'unknown type'}) was attached but cannot be shown]"}]
