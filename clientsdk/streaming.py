"""A typed stream of AG-UI events over one run's SSE answer.

`Stream` parses each `data:` payload with the same pydantic event models the server emits
(`ag_ui.core.Event`, a discriminated union; Tambo's own events arrive as `CustomEvent`). It is an
iterator and a context manager and always closes its HTTP response: at the end of the stream, on
`close()`, on leaving a `with` block, and when iteration stops because of an exception.

A RUN_ERROR event is yielded like any other event: this layer reports what the server said. The tool
loop (`clientsdk.tool_loop`) is the layer that turns it into a `RunError`.

`last_event_id` is the SSE `id:` of the event last yielded (the server numbers a run's events 1, 2,
3 …; docs/protocol.md#resumable-runs); a reader that lost its connection sends it back as `Last-Event-ID`.
"""
from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import requests
from ag_ui.core import Event, EventType
from pydantic import TypeAdapter, ValidationError

from ._sse import SSEMessage, iter_sse_events, response_chunks
from .errors import APIConnectionError, APIResponseValidationError

__all__ = ["Stream", "parse_event", "AGUIEvent"]

logger = logging.getLogger(__name__)

AGUIEvent = Any  # one of the members of ag_ui.core.Event
_EVENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(Event)
_KNOWN_TYPES = frozenset(t.value for t in EventType)


def parse_event(data: str) -> AGUIEvent | None:
    """Parse one SSE `data` payload into an AG-UI event model.

    Returns None for an event type this version of `ag_ui` does not know (a newer server may send
    one; skipping it keeps old clients working). Raises APIResponseValidationError for anything
    else that does not match the protocol.
    """
    try:
        raw = json.loads(data)
    except ValueError as exc:
        raise APIResponseValidationError(f"event is not JSON: {data[:200]!r}") from exc
    if not isinstance(raw, dict):
        raise APIResponseValidationError(f"event is not a JSON object: {data[:200]!r}")
    if raw.get("type") not in _KNOWN_TYPES:
        logger.debug("skipping unknown event type %r", raw.get("type"))
        return None
    try:
        return _EVENT_ADAPTER.validate_python(raw)
    except ValidationError as exc:
        raise APIResponseValidationError(f"malformed {raw.get('type')} event: {exc.errors()[:3]}") from exc


def _parse(message: SSEMessage) -> AGUIEvent | None:
    """A last event the stream cut off is still read when it is whole (a server may end without the
    blank line); when it is not JSON, the connection broke mid-event: a resumable failure, not a
    server that speaks the protocol wrong."""
    try:
        return parse_event(message.data)
    except APIResponseValidationError as exc:
        if message.complete:
            raise
        raise APIConnectionError("The event stream broke off in the middle of an event.") from exc


def _shutdown_socket(response: requests.Response) -> None:
    """Wake up a read blocked in another thread: closing the response alone does not, the socket
    must be shut down. Best effort; reaches into urllib3/http.client because they offer no hook."""
    raw = response.raw
    sock = getattr(getattr(raw, "connection", None), "sock", None)
    if sock is None:
        fp = getattr(getattr(raw, "_fp", None), "fp", None)
        sock = getattr(getattr(fp, "raw", None), "_sock", None)
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class Stream:
    """Iterate the AG-UI events of one run. `thread_id`/`run_id` come from the answer's headers."""

    def __init__(self, response: requests.Response | None, *, chunks: Iterable[bytes] | None = None) -> None:
        self.response = response
        headers = response.headers if response is not None else {}
        self.thread_id: str | None = headers.get("X-Thread-Id")
        self.run_id: str | None = headers.get("X-Run-Id")
        self._chunks = chunks if chunks is not None else response_chunks(response)  # type: ignore[arg-type]
        #: The SSE id of the last event yielded (or skipped as unknown); None before the first one.
        self.last_event_id: str | None = None
        self._iterator: Iterator[AGUIEvent] = self._events()
        self._closed = threading.Event()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def _events(self) -> Iterator[AGUIEvent]:
        try:
            for message in iter_sse_events(self._chunks):
                if self.closed:
                    return
                event = _parse(message)
                self.last_event_id = message.id
                if event is None:
                    continue
                if event.type == EventType.RUN_STARTED:
                    self.thread_id = self.thread_id or event.thread_id
                    self.run_id = event.run_id
                yield event
        except Exception:
            # close() from another thread makes the blocked read fail; that is the end, not an error.
            if self.closed:
                return
            raise
        finally:
            self.close()

    def __iter__(self) -> Iterator[AGUIEvent]:
        return self

    def __next__(self) -> AGUIEvent:
        return next(self._iterator)

    def close(self) -> None:
        """Stop reading and release the connection. Safe to call twice and from another thread."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self.response is not None:
            _shutdown_socket(self.response)
            self.response.close()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
