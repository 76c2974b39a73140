"""The byte-level SSE layer, the one both streams of this package read: the v1 run stream
(`streaming.Stream`) and the chat-completions stream of the message engine (`message.sse`).

sseclient-py does the framing (events split across network chunks, `data:` fields spread over
several lines, `:` keep-alive comments, CRLF, LF or CR line ends, a last event the stream cut off
without its blank line). We feed it bytes as soon as they arrive, make sure they are valid UTF-8
first (sseclient-py would raise on a bad byte; we read U+FFFD instead, as browsers do), and map
transport failures to the client's own errors.
"""
from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from typing import Any

import requests
import urllib3.exceptions
from sseclient import SSEClient

from .errors import APIConnectionError, APITimeoutError

__all__ = ["iter_sse_data", "response_chunks"]

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


def iter_sse_data(chunks: Iterable[bytes | str]) -> Iterator[str]:
    """Yield the `data` of every event in a stream of network chunks (bytes, or already decoded
    text); the data lines of one event are joined with `\\n`, events without data are skipped."""
    for event in SSEClient(_valid_utf8(chunks)).events():
        yield event.data


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
