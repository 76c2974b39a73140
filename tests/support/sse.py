"""Reading an SSE answer in tests: the raw `data:` JSON events, in order."""
from __future__ import annotations

import json
from typing import Iterable, Iterator

import requests


def iter_events(response: requests.Response) -> Iterator[dict]:
    yield from decode_events(response.iter_content(chunk_size=None))


def decode_events(chunks: Iterable[bytes]) -> Iterator[dict]:
    """The JSON `data` of each event in a body that arrives in `chunks` (the tests' one SSE decoder)."""
    buffer = b""
    for chunk in chunks:
        buffer += chunk
        while b"\n\n" in buffer:
            frame, buffer = buffer.split(b"\n\n", 1)
            data = [line[5:].strip() for line in frame.split(b"\n") if line.startswith(b"data:")]
            if data:
                yield json.loads(b"\n".join(data))


def read_events(response: requests.Response) -> list[dict]:
    return list(iter_events(response))


def types(events: list[dict]) -> list[str]:
    return [e["type"] if e["type"] != "CUSTOM" else e["name"] for e in events]
