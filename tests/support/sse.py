"""Reading an SSE answer in tests: the raw `data:` JSON events, in order (with their `id:` if asked)."""
from __future__ import annotations

import json
from typing import Iterable, Iterator

import requests


def iter_events(response: requests.Response) -> Iterator[dict]:
    yield from decode_events(response.iter_content(chunk_size=None))


def decode_events(chunks: Iterable[bytes]) -> Iterator[dict]:
    """The JSON `data` of each event in a body that arrives in `chunks`."""
    for _, data in decode_frames(chunks):
        yield data


def decode_frames(chunks: Iterable[bytes]) -> Iterator[tuple[int | str | None, dict]]:
    """(id, JSON data) of each event in a body that arrives in `chunks`, the id None for an event
    without an `id:` line, a str for one that is not a number (the live thread stream's `<runId>:<seq>`)
    (the tests' one SSE decoder)."""
    buffer = b""
    for chunk in chunks:
        buffer += chunk
        while b"\n\n" in buffer:
            frame, buffer = buffer.split(b"\n\n", 1)
            lines = frame.split(b"\n")
            ids = [line[3:].strip() for line in lines if line.startswith(b"id:")]
            data = [line[5:].strip() for line in lines if line.startswith(b"data:")]
            if data:
                seq = (int(ids[-1]) if ids[-1].isdigit() else ids[-1].decode()) if ids else None
                yield seq, json.loads(b"\n".join(data))


def read_events(response: requests.Response) -> list[dict]:
    return list(iter_events(response))


def types(events: list[dict]) -> list[str]:
    return [e["type"] if e["type"] != "CUSTOM" else e["name"] for e in events]


def iter_frames(response: requests.Response) -> Iterator[tuple[int | None, dict]]:
    """The answer's events with their ids, in order."""
    yield from decode_frames(response.iter_content(chunk_size=None))


def read_frames(response: requests.Response) -> list[tuple[int | None, dict]]:
    return list(iter_frames(response))
