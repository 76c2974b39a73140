"""What a stored content block says as plain text: for the model's input (runs/history.py) and the
side tasks' transcripts (`transcript`: thread names, suggestions, memory extraction), which all read
messages and none owns them."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from threads.models import Message


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


def message_text(message: "Message") -> str:
    return "\n".join(block_text(b) for b in message.content if b.get("type") in ("text", "resource")).strip()


def transcript(messages: Iterable["Message"], *, max_chars: int, keep_end: bool) -> str:
    """The conversation as plain `User:` / `Assistant:` lines for a prompt, at most `max_chars` long
    (its end when `keep_end`, else its start).

    Tool traffic is left out (it means little to a title or a suggestion); a rendered component is
    named, since it is what the user saw.
    """
    lines = []
    for message in messages:
        if message.role not in ("user", "assistant"):
            continue
        text = message_text(message)
        shown = [b.get("name") for b in message.content if b.get("type") == "component"]
        if shown:
            text = (text + "\n" if text else "") + "".join(f"[showed the {name} component]" for name in shown)
        if text:
            lines.append(f"{message.role.capitalize()}: {text}")
    joined = "\n".join(lines)
    if len(joined) <= max_chars:
        return joined
    return joined[-max_chars:] if keep_end else joined[:max_chars]
