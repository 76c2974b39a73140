"""Reading an SSE answer in tests: the raw `data:` JSON events, in order (with their `id:` if asked)."""
from __future__ import annotations

import json
from typing import AsyncIterable, AsyncIterator, Iterable, Iterator

import requests


def iter_events(response: requests.Response) -> Iterator[dict]:
    yield from decode_events(response.iter_content(chunk_size=None))


def decode_events(chunks: Iterable[bytes]) -> Iterator[dict]:
    """The JSON `data` of each event in a body that arrives in `chunks`."""
    for _, data in decode_frames(chunks):
        yield data


class FrameSplitter:
    """Cuts a body that arrives in chunks into its SSE frames (the bytes between blank lines): the one
    frame splitter of the tests and of bin/bench's load generators."""

    def __init__(self) -> None:
        self.buffer = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        """The frames `chunk` completed, in order (the rest waits for the next chunk)."""
        self.buffer += chunk
        if b"\n\n" not in self.buffer:
            return []
        *frames, self.buffer = self.buffer.split(b"\n\n")
        return frames


def frames_of(chunks: Iterable[bytes]) -> Iterator[bytes]:
    splitter = FrameSplitter()
    for chunk in chunks:
        yield from splitter.feed(chunk)


async def aframes_of(chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    splitter = FrameSplitter()
    async for chunk in chunks:
        for frame in splitter.feed(chunk):
            yield frame


def data_of(frame: bytes) -> dict | None:
    """A frame's JSON `data` (None for a frame without one: a comment, a keep-alive)."""
    data = [line[5:].strip() for line in frame.split(b"\n") if line.startswith(b"data:")]
    return json.loads(b"\n".join(data)) if data else None


def decode_frames(chunks: Iterable[bytes]) -> Iterator[tuple[int | str | None, dict]]:
    """(id, JSON data) of each event in a body that arrives in `chunks`, the id None for an event
    without an `id:` line, a str for one that is not a number (the live thread stream's `<runId>:<seq>`)
    (the tests' one SSE decoder)."""
    for frame in frames_of(chunks):
        data = data_of(frame)
        if data is not None:
            ids = [line[3:].strip() for line in frame.split(b"\n") if line.startswith(b"id:")]
            seq = (int(ids[-1]) if ids[-1].isdigit() else ids[-1].decode()) if ids else None
            yield seq, data


def read_events(response: requests.Response) -> list[dict]:
    return list(iter_events(response))


def types(events: list[dict]) -> list[str]:
    return [e["type"] if e["type"] != "CUSTOM" else e["name"] for e in events]


def iter_frames(response: requests.Response) -> Iterator[tuple[int | None, dict]]:
    """The answer's events with their ids, in order."""
    yield from decode_frames(response.iter_content(chunk_size=None))


def read_frames(response: requests.Response) -> list[tuple[int | None, dict]]:
    return list(iter_frames(response))
