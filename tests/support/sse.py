"""Reading an SSE answer in tests: the raw `data:` JSON events, in order."""
from __future__ import annotations

import json
from typing import Iterator

import requests


def iter_events(response: requests.Response) -> Iterator[dict]:
    buffer = b""
    for chunk in response.iter_content(chunk_size=None):
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


def iter_frames(response: requests.Response) -> Iterator[tuple[int | None, dict]]:
    """The answer's events with their ids (None for an event without an `id:` line), in order."""
    buffer = b""
    for chunk in response.iter_content(chunk_size=None):
        buffer += chunk
        while b"\n\n" in buffer:
            frame, buffer = buffer.split(b"\n\n", 1)
            ids = [line[3:].strip() for line in frame.split(b"\n") if line.startswith(b"id:")]
            data = [line[5:].strip() for line in frame.split(b"\n") if line.startswith(b"data:")]
            if data:
                yield (int(ids[-1]) if ids else None), json.loads(b"\n".join(data))


def read_frames(response: requests.Response) -> list[tuple[int | None, dict]]:
    return list(iter_frames(response))
