"""The byte-level SSE layer: sseclient-py over a `requests` streaming response.

sseclient-py does the framing (events split across network chunks, `data:` fields spread over
several lines, `:` keep-alive comments, CRLF or LF line ends). We only feed it bytes as soon as they
arrive, keep the event id the way the SSE standard does, and map transport failures to the
client's own errors.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import requests
import urllib3.exceptions
from sseclient import SSEClient

from .errors import APIConnectionError, APITimeoutError

__all__ = ["SSEMessage", "iter_sse_events", "iter_sse_data", "response_chunks"]

_READ_SIZE = 64 * 1024


@dataclass(frozen=True)
class SSEMessage:
    """One dispatched event: its `data`, and the stream's last event id as of this event (the SSE
    "last event ID buffer": an `id:` field sets it, and it carries over to events without one)."""

    data: str
    id: str | None = None


def response_chunks(response: requests.Response) -> Iterator[bytes]:
    """Yield the body of a streaming response as soon as bytes arrive.

    `response.iter_content` blocks until its chunk size is filled on a body without chunked
    transfer-encoding, which would hold events back; `read1` returns whatever one read gives.
    """
    raw = response.raw
    read1 = getattr(raw, "read1", None)
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


class _Source:
    """The chunks, remembering when they ran out: sseclient-py hands out the bytes left after the
    last blank line as one more event, but the standard says an event the stream cut off before
    its blank line is discarded (a connection dropped mid-event must not yield half an event)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = chunks
        self.exhausted = False

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks
        self.exhausted = True


def iter_sse_events(chunks: Iterable[bytes]) -> Iterator[SSEMessage]:
    """Yield every complete event with data in a byte stream (events without data are skipped)."""
    source = _Source(chunks)
    last_id: str | None = None
    for event in SSEClient(source).events():
        if source.exhausted:
            return
        if event.id is not None:
            last_id = event.id
        yield SSEMessage(event.data, last_id)


def iter_sse_data(chunks: Iterable[bytes]) -> Iterator[str]:
    """Yield the `data` of every event in a byte stream (events without data are skipped)."""
    for message in iter_sse_events(chunks):
        yield message.data
