"""Token counts estimated without a tokenizer (none is downloaded at run time: tiktoken fetches its
tables): a message's characters over CHARS_PER_TOKEN plus MESSAGE_OVERHEAD tokens of role and framing.

The one estimate: the context budget (runs/context_budget.py, which calibrates it per model against
what providers report), the offline model's usage (providers/offline.py, which has no tokenizer
and so reports this estimate as its prompt and completion tokens) and the usage charged for a call whose
vendor reported none (providers/usage_estimate.py) all use it.
"""
from __future__ import annotations

import json
from typing import Any

CHARS_PER_TOKEN = 4.0
MESSAGE_OVERHEAD = 4  # tokens of role and framing per message


# An image, audio or file part, whatever its size: vendors bill an image by its pixels (about 85 to
# 1,600 tokens), never by its base64, which counted as text made one photo exceed any context budget.
MEDIA_PART_TOKENS = 1000
# The parts that carry media: the model's (providers/base.py) and the wire's (`resource` with a `blob`).
_MEDIA_PARTS = {"image_url", "image", "input_audio", "file", "document"}


def message_tokens(message: dict[str, Any], factor: float = 1.0) -> int:
    """One model message's estimated tokens (its content and tool calls), times `factor`; each media
    part counts MEDIA_PART_TOKENS."""
    size = media = 0
    for key in ("content", "tool_calls"):
        value = message.get(key)
        if isinstance(value, str):
            size += len(value)
        elif isinstance(value, list) and key == "content":
            for part in value:
                if _is_media(part):
                    media += 1
                else:
                    size += len(part) if isinstance(part, str) else len(json.dumps(part, ensure_ascii=False))
        elif value:
            size += len(json.dumps(value, ensure_ascii=False))
    return int(size / CHARS_PER_TOKEN * factor) + media * MEDIA_PART_TOKENS + MESSAGE_OVERHEAD


def _is_media(part: Any) -> bool:
    if not isinstance(part, dict):
        return False
    kind = part.get("type")
    resource = part.get("resource")
    return kind in _MEDIA_PARTS or (kind == "resource" and isinstance(resource, dict) and bool(resource.get("blob")))


def prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """The estimated input tokens of a request's messages."""
    return sum(message_tokens(m) for m in messages)


def chars_tokens(chars: int) -> int:
    """The estimated tokens of `chars` characters of an answer (text, reasoning, tool arguments)."""
    return int(chars / CHARS_PER_TOKEN + 0.5)


def text_tokens(text: str) -> int:
    """The estimated tokens of an answer's text (at least one)."""
    return max(1, chars_tokens(len(text)))
