"""OpenAI-style completion chunks from a Server-Sent Events stream.

The framing is `clientsdk._sse`, the decoder the v1 run stream uses too; this module adds what
OpenAI-style streams need on top: JSON chunks, the `[DONE]` sentinel, tolerance of servers that
omit the blank line between events, and the abort signal.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from .._sse import iter_sse_data, response_chunks
from .abort import AbortError

logger = logging.getLogger(__name__)

DONE = "[DONE]"


def sse_stream_to_generator(
    stream: Any, abort_signal: threading.Event | None = None
) -> Iterator[Any]:
    """Yield the JSON value of each `data:` event read from `stream`, until `[DONE]`.

    `stream` is an iterable of `bytes`/`str` network chunks, or an object with
    `iter_content()` (a streaming `requests.Response`). The data lines of one
    event are joined with `\\n` as the SSE standard says, and when that is not
    valid JSON each line is tried on its own, so servers that omit the blank
    line between events still work. Unparsable data is skipped with a logged
    warning. Raises `AbortError` if `abort_signal` is set before or while
    reading (also when the read failed because the abort closed the
    connection); a broken connection of a response raises the client's
    `APIConnectionError`.
    """
    chunks = response_chunks(stream) if hasattr(stream, "iter_content") else stream
    try:
        for data in iter_sse_data(_checked(chunks, abort_signal)):
            for value in _values(data):
                if value is _DONE_MARK:
                    return
                yield value
    except AbortError:
        raise
    except Exception as exc:
        if abort_signal is not None and abort_signal.is_set():
            raise AbortError() from exc
        raise


_DONE_MARK = object()


def _checked(chunks: Iterable[bytes | str], abort_signal: threading.Event | None) -> Iterator[bytes | str]:
    """The chunks, with the abort signal looked at before each one and at the end."""
    for chunk in chunks:
        _check(abort_signal)
        yield chunk
    _check(abort_signal)


def _check(abort_signal: threading.Event | None) -> None:
    if abort_signal is not None and abort_signal.is_set():
        raise AbortError()


def _values(data: str) -> Iterator[Any]:
    """The JSON values of one event's data (then `_DONE_MARK` if `[DONE]` came)."""
    if data.strip() == DONE:
        yield _DONE_MARK
        return
    try:
        yield json.loads(data)
        return
    except ValueError:
        pass
    for line in data.split("\n"):
        if line.strip() == DONE:
            yield _DONE_MARK
            return
        try:
            value = json.loads(line)
        except ValueError:
            logger.warning("skipping unparsable SSE data: %.200r", line)
            continue
        yield value
