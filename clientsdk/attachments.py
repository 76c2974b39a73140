"""Images and files for a run's message: a path, or bytes with their MIME type, as the resource part
the server takes (`{type:"resource", resource:{name, mimeType, blob}}`, what `@tambo-ai/react`'s
input sends). The server checks the bytes against the type and refuses what no model reads (PNG,
JPEG, GIF and WebP images, PDF, text and JSON are read; see the server's docs/images-and-voice.md)."""
from __future__ import annotations

import base64
import mimetypes
import os
from pathlib import Path
from typing import Any, Union

# A path, (bytes, mime type), (bytes, mime type, name), or a ready resource part.
Attachment = Union[str, os.PathLike, tuple, dict]


def attachment_part(source: Attachment) -> dict[str, Any]:
    """The resource part for `source`. Raises ValueError when its MIME type cannot be known."""
    if isinstance(source, dict):
        return source
    if isinstance(source, tuple):
        data, mime_type, *rest = source
        if not isinstance(data, (bytes, bytearray)) or not mime_type:
            raise ValueError("an attachment given as a tuple is (bytes, mime type[, name])")
        return _part(bytes(data), mime_type, rest[0] if rest else None)
    path = Path(source)
    mime_type, _ = mimetypes.guess_type(path.name)
    if mime_type is None:
        raise ValueError(f"the type of {path.name} is unknown; pass (bytes, mime type, name) instead")
    return _part(path.read_bytes(), mime_type, path.name)


def _part(data: bytes, mime_type: str, name: str | None) -> dict[str, Any]:
    resource = {"mimeType": mime_type, "blob": base64.b64encode(data).decode("ascii")}
    if name:
        resource = {"name": name, **resource}
    return {"type": "resource", "resource": resource}


def with_attachments(message: str | list | dict, attachments) -> list | dict:
    """`message` (text, content blocks, or a message dict) with the attachments' parts after its content."""
    parts = [attachment_part(item) for item in attachments]
    if isinstance(message, str):
        return ([{"type": "text", "text": message}] if message else []) + parts
    if isinstance(message, list):
        return [*message, *parts]
    return {**message, "content": [*message.get("content", []), *parts]}
