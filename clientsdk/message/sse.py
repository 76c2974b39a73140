"""A byte-level Server-Sent Events reader for OpenAI-style completion streams."""

from __future__ import annotations

import codecs
import json
import logging
import re
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from .abort import AbortError

logger = logging.getLogger(__name__)

DONE = "[DONE]"
_LINE_END = re.compile(r"\r\n|\r|\n")


def sse_stream_to_generator(
    stream: Any, abort_signal: threading.Event | None = None
) -> Iterator[Any]:
    """Yield the JSON value of each `data:` event read from `stream`, until `[DONE]`.

    `stream` is an iterable of `bytes`/`str` network chunks, or an object with
    `iter_content()` (a streaming `requests.Response`). Lines are split on
    `\\n`, `\\r\\n` or `\\r` even when a line end falls across chunks, and a last
    line without a line end is still read when the stream ends. Only `data:`
    lines count; the data lines of one event are joined with `\\n` as the SSE
    standard says, and when that is not valid JSON each line is tried on its own,
    so servers that omit the blank line between events still work. Unparsable
    data is skipped with a logged warning. Raises `AbortError` if
    `abort_signal` is set before or while reading (also when the read failed
    because the abort closed the connection).
    """
    chunks = _response_chunks(stream) if hasattr(stream, "iter_content") else stream
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    events = _EventAssembler()
    buffer = ""
    try:
        for chunk in chunks:
            _check(abort_signal)
            buffer += decoder.decode(chunk) if isinstance(chunk, bytes) else chunk
            lines, buffer = _split_complete_lines(buffer)
            for line in lines:
                yield from events.feed(line)
        buffer += decoder.decode(b"", final=True)
        _check(abort_signal)
        # A stream cut without a final newline still carries its last line (0.4 dropped it).
        for line in _LINE_END.split(buffer) if buffer else ():
            yield from events.feed(line)
        yield from events.feed("")
    except _Done:
        return
    except AbortError:
        raise
    except Exception as exc:
        if abort_signal is not None and abort_signal.is_set():
            raise AbortError() from exc
        raise


def _response_chunks(response: Any) -> Iterable[bytes]:
    """Yield a streaming `requests.Response` body as soon as bytes arrive.

    `iter_content(chunk_size=None)` yields per HTTP chunk for a chunked body,
    but for a body delimited by closing the connection (HTTP/1.0 servers) it
    reads until EOF, which would hold back every event; `read1` returns
    whatever has arrived.
    """
    raw = getattr(response, "raw", None)
    if getattr(raw, "chunked", False) or not hasattr(raw, "read1"):
        yield from response.iter_content(chunk_size=None)
        return
    while True:
        data = raw.read1(65536)
        if not data:
            return
        yield data


class _Done(Exception):
    """Internal: `[DONE]` was read."""


def _check(abort_signal: threading.Event | None) -> None:
    if abort_signal is not None and abort_signal.is_set():
        raise AbortError()


def _split_complete_lines(buffer: str) -> tuple[list[str], str]:
    """Split off every complete line; the unfinished tail stays in the buffer."""
    parts = _LINE_END.split(buffer)
    rest = parts.pop()
    # A trailing "\r" may be the first half of a "\r\n" that the next chunk
    # completes; holding it back avoids reading a phantom blank line.
    if buffer.endswith("\r"):
        rest = parts.pop() + "\r"
    return parts, rest


class _EventAssembler:
    """Collects `data:` lines until a blank line ends the event."""

    def __init__(self) -> None:
        self._data: list[str] = []

    def feed(self, line: str) -> Iterator[Any]:
        if line == "":
            yield from self._dispatch()
            return
        field, _, value = line.partition(":")
        if field != "data":
            return  # comments (":...") and event/id/retry fields carry no chunk
        if value.startswith(" "):
            value = value[1:]
        if value.strip() == DONE:
            yield from self._dispatch()
            raise _Done()
        self._data.append(value)

    def _dispatch(self) -> Iterator[Any]:
        lines, self._data = self._data, []
        if not lines:
            return
        try:
            yield json.loads("\n".join(lines))
            return
        except ValueError:
            pass
        for line in lines:
            try:
                value = json.loads(line)
            except ValueError:
                logger.warning("skipping unparsable SSE data: %.200r", line)
                continue
            yield value
