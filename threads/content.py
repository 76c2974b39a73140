"""What a stored content block says as plain text: for the model's input (runs/history.py) and the
side tasks' transcripts (assist/model.py), which both read messages and neither owns them."""
from __future__ import annotations

from typing import Any


def block_text(block: dict[str, Any]) -> str:
    if block.get("type") == "text":
        return block.get("text", "")
    if block.get("type") == "resource":
        resource = block.get("resource") or {}
        if resource.get("text"):
            return resource["text"]
        label = resource.get("name") or resource.get("uri") or "resource"
        return f"[{label} ({resource.get('mimeType', 'unknown type')})]"
    return ""
