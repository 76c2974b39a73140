"""Real image and document bytes for the attachment tests, built here so no binary fixture is needed."""
from __future__ import annotations

import base64
import random
import struct
import zlib


def png(width: int = 1, height: int = 1, seed: int = 0) -> bytes:
    """A valid RGB PNG of random pixels (incompressible: its size is about width × height × 3 bytes)."""
    rng = random.Random(seed)

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 1))
            + chunk(b"IEND", b""))


def pdf() -> bytes:
    """A one-page PDF with no text: enough for a model API to take it as a document."""
    return (b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
            b"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 72 72]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def image_part(data: bytes, name: str = "pic.png", mime_type: str = "image/png") -> dict:
    """The part `@tambo-ai/react`'s input sends for a pasted image."""
    return {"type": "resource", "resource": {"name": name, "mimeType": mime_type, "blob": b64(data)}}
