"""The images and files of a user message, checked at the edge (docs/images-and-voice.md).

What `@tambo-ai/react`'s input sends is `{type:"resource", resource:{blob, mimeType, name?}}`. Each
part is checked once, before anything is stored, so every part the model later receives is one it can
read: a blob must be strict base64 of a type the providers take (images, PDF, text, JSON) whose bytes
are what its `mimeType` says (a "PNG" that is text is refused: the model API would fail the whole run
on it later, after the message is stored); a `uri` without a blob must be an http(s) image URL or an
MCP resource (`@server:uri`, resolved by runs/attachments.py); anything else is refused, naming the
part. Refusals are 400 `VALIDATION_ERROR` with the part's `field`, like every other input check.
"""
from __future__ import annotations

import binascii
import json
from dataclasses import dataclass
from typing import Iterable

from core.public_urls import check_public_url
from core.sanity import InputError

# What the OpenAI and Anthropic APIs both accept as images.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
PDF = "application/pdf"
# A message's parts are rendered, stored and sent one by one: a bound keeps a body of thousands of
# tiny parts from costing more than its bytes suggest.
MAX_PARTS = 100

_MAGIC: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    PDF: (b"%PDF-",),
}


@dataclass(frozen=True)
class Part:
    """What a checked resource part is, for the history read and the offline model."""

    kind: str  # "image" | "file" | "text" | "image_url" | "mcp"
    mime_type: str | None
    size: int  # decoded bytes (0 for a URL)


def is_text_type(mime_type: str) -> bool:
    return mime_type.startswith("text/") or mime_type == "application/json" or mime_type.endswith("+json")


def base_type(mime_type: str | None) -> str:
    """`image/png; charset=…` → `image/png`, lower-cased."""
    return (mime_type or "").split(";", 1)[0].strip().lower()


def check_part_count(blocks: list, field: str) -> None:
    """Refuses a message of more than MAX_PARTS text and resource parts (the list at `field`)."""
    if len(blocks) > MAX_PARTS:
        raise InputError(field, f"{field} has {len(blocks)} parts; a message may have at most {MAX_PARTS}.")


def check_parts(blocks: Iterable[dict], field: str, positions: list[int] | None = None) -> None:
    """Checks the `resource` blocks among `blocks` (wire dicts) of the list at `field`, where `positions`
    (default: 0, 1, …) are their indexes; raises InputError naming the part."""
    blocks = list(blocks)
    check_part_count(blocks, field)
    for index, block in zip(positions or range(len(blocks)), blocks):
        if block.get("type") == "resource":
            check_resource(block.get("resource") or {}, f"{field}[{index}].resource")


def check_resource(resource: dict, field: str) -> Part:
    """The checked kind of one resource; raises InputError naming `field` (the resource's path)."""
    mime = base_type(resource.get("mimeType"))
    label = resource.get("name") or "the part"
    if resource.get("blob") is not None:
        return _check_blob(resource["blob"], mime, label, field)
    if resource.get("text") is not None:
        return Part("text", mime or "text/plain", len(resource["text"].encode()))
    uri = resource.get("uri") or ""
    if uri.startswith("@") and ":" in uri:
        return Part("mcp", mime or None, 0)
    if uri:
        scheme = uri.split(":", 1)[0].lower() if ":" in uri else ""
        if scheme not in ("http", "https"):
            raise InputError(f"{field}.uri", f"{field}.uri: only http(s) URLs (or MCP resources, "
                             f"@server:uri) can be sent without a blob, not {scheme or 'a relative'} URLs.")
        if mime and not mime.startswith("image/"):
            raise InputError(f"{field}.mimeType", f"{field}: a URL without a blob is passed to the model for "
                             f"images only; send {label} ({mime}) as a base64 blob.")
        check_public_url(uri, f"{field}.uri")
        return Part("image_url", mime or None, 0)
    raise InputError(field, f"{field}: a resource needs a blob (base64), a text or a uri.")


def _check_blob(blob: str, mime: str, label: str, field: str) -> Part:
    if not mime:
        raise InputError(f"{field}.mimeType", f"{field}.mimeType is required with a blob.")
    if not (mime in IMAGE_TYPES or mime == PDF or is_text_type(mime)):
        raise InputError(f"{field}.mimeType", f"{field}: {label} is {mime}, which cannot be sent to the model; "
                         f"send PNG, JPEG, GIF or WebP images, PDF, text or JSON.")
    try:
        data = binascii.a2b_base64(blob, strict_mode=True)
    except (binascii.Error, ValueError):
        raise InputError(f"{field}.blob", f"{field}.blob is not valid base64.") from None
    if not data:
        raise InputError(f"{field}.blob", f"{field}.blob is empty.")
    if not _bytes_match(mime, data):
        raise InputError(f"{field}.blob", f"{field}: the bytes of {label} are not {mime}.")
    kind = "image" if mime in IMAGE_TYPES else "file" if mime == PDF else "text"
    return Part(kind, mime, len(data))


def _bytes_match(mime: str, data: bytes) -> bool:
    if mime == "image/webp":
        return data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    if mime in _MAGIC:
        return data.startswith(_MAGIC[mime])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if "\x00" in text:
        return False  # not text, and PostgreSQL could not store it once inlined
    if mime == "application/json" or mime.endswith("+json"):
        try:
            json.loads(text)
        except ValueError:
            return False
    return True


def blob_bytes(resource: dict) -> bytes:
    """The decoded blob of a checked resource."""
    return binascii.a2b_base64(resource["blob"])
