"""The byte-level SSE layer: sseclient-py over a `requests` streaming response.

sseclient-py does the framing (events split across network chunks, `data:` fields spread over
several lines, `:` keep-alive comments, CRLF or LF line ends). We only feed it bytes as soon as they
arrive and map transport failures to the client's own errors.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import requests
import urllib3.exceptions
from sseclient import SSEClient

from .errors import APIConnectionError, APITimeoutError

__all__ = ["iter_sse_data", "response_chunks"]

_READ_SIZE = 64 * 1024


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


def iter_sse_data(chunks: Iterable[bytes]) -> Iterator[str]:
    """Yield the `data` of every event in a byte stream (events without data are skipped)."""
    for event in SSEClient(chunks).events():
        yield event.data
