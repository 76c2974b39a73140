"""The byte-level SSE layer, the one both streams of this package read: the v1 run stream
(`streaming.Stream`) and the chat-completions stream of the message engine (`message.sse`).

sseclient-py does the framing (events split across network chunks, `data:` fields spread over
several lines, `:` keep-alive comments, CRLF, LF or CR line ends, a last event the stream cut off
without its blank line). We feed it bytes as soon as they arrive, make sure they are valid UTF-8
first (sseclient-py would raise on a bad byte; we read U+FFFD instead, as browsers do), keep the
event id the way the SSE standard does, and map transport failures to the client's own errors.
"""
from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import requests
import urllib3.exceptions
from sseclient import SSEClient

from .errors import APIConnectionError, APITimeoutError

__all__ = ["SSEMessage", "iter_sse_events", "iter_sse_data", "response_chunks"]

_READ_SIZE = 64 * 1024


def response_chunks(response: Any) -> Iterator[bytes]:
    """Yield the body of a streaming `requests.Response` as soon as bytes arrive.

    `response.iter_content` blocks until its chunk size is filled on a body without chunked
    transfer-encoding, which would hold events back; `read1` returns whatever one read gives.
    Objects without a raw stream (test doubles) are read with `iter_content`. Raises
    APITimeoutError or APIConnectionError when the connection stalls or breaks.
    """
    read1 = getattr(getattr(response, "raw", None), "read1", None)
    try:
        if read1 is None:
            yield from response.iter_content(chunk_size=None)
            return
        while True:
            data = read1(_READ_SIZE)
            if not data:
                return
            yield data
    except (urllib3.exceptions.ReadTimeoutError, requests.Timeout) as exc:
        raise APITimeoutError("The event stream stopped sending data in time.") from exc
    except (urllib3.exceptions.HTTPError, requests.RequestException, OSError) as exc:
        raise APIConnectionError(f"The event stream broke off: {exc.__class__.__name__}.") from exc


@dataclass(frozen=True)
class SSEMessage:
    """One dispatched event: its `data`; the stream's last event id as of this event (the SSE "last
    event ID buffer": an `id:` field sets it, and it carries over to events without one); and
    whether its blank line came (False only for a last event the stream cut off)."""

    data: str
    id: str | None = None
    complete: bool = True


def iter_sse_events(chunks: Iterable[bytes | str]) -> Iterator[SSEMessage]:
    """Yield every event with data in a stream of network chunks (bytes, or already decoded text);
    the data lines of one event are joined with `\\n`, events without data are skipped."""
    source = _Source(_valid_utf8(chunks))
    last_id: str | None = None
    for event in SSEClient(source).events():
        if event.id is not None:
            last_id = event.id
        yield SSEMessage(event.data, last_id, complete=not source.exhausted)


def iter_sse_data(chunks: Iterable[bytes | str]) -> Iterator[str]:
    """The `data` of every event of `iter_sse_events` (a last event without its blank line included)."""
    for message in iter_sse_events(chunks):
        yield message.data


class _Source:
    """The chunks, remembering when they ran out: sseclient-py hands out the bytes left after the
    last blank line as one more event only once its source is exhausted."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = chunks
        self.exhausted = False

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks
        self.exhausted = True


def _valid_utf8(chunks: Iterable[bytes | str]) -> Iterator[bytes]:
    # An incremental decoder keeps a character split across two chunks whole.
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    for chunk in chunks:
        text = chunk if isinstance(chunk, str) else decoder.decode(chunk)
        if text:
            yield text.encode()
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail.encode()
