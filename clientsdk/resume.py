"""A run's event stream that survives a dropped connection (docs/protocol.md#resumable-runs).

The server numbers a run's events (`id: 1, 2, 3 …`) and keeps them while the run lives and five
minutes after. `ResumingStream` reads one run from a first `Stream` (the run's own answer, or the
events route) and, when that connection breaks while the run is alive, reads on from
`GET …/runs/{runId}/events` with `Last-Event-ID` set to the last id it delivered. The caller sees
each event once: an event whose id is not above the last delivered one is dropped.

What counts as a dropped connection: a transport error or a read timeout mid-stream
(`APIConnectionError`, which `_sse` raises for requests' ChunkedEncodingError, ConnectionError and
ReadTimeout), or the stream ending before RUN_FINISHED/RUN_ERROR. Reconnecting is retried with the
client's backoff (`_base.retry_delay`) on connection errors, 429 and 5xx, at most `max_attempts`
times in a row; an attempt that delivers new events resets the count. A 404 (the run expired or
never existed) or 400 is raised at once, as is everything once the attempts run out.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ag_ui.core import EventType

from ._base import retry_delay
from .errors import APIConnectionError, InternalServerError, RateLimitError
from .streaming import AGUIEvent, Stream

__all__ = ["ResumingStream", "DEFAULT_RESUME_ATTEMPTS"]

logger = logging.getLogger("clientsdk")

DEFAULT_RESUME_ATTEMPTS = 5
_TERMINAL = (EventType.RUN_FINISHED, EventType.RUN_ERROR)
# Worth another try: the connection (again), or a server that is busy or failing for a moment.
_RETRYABLE = (APIConnectionError, InternalServerError, RateLimitError)

# open_events(thread_id, run_id, after) -> a Stream of the run's events after id `after`.
EventsOpener = Callable[[str, str, "str | None"], Stream]


def _seq(event_id: str | None) -> int | None:
    try:
        return int(event_id) if event_id is not None else None
    except ValueError:
        return None


class ResumingStream:
    """Iterate one run's AG-UI events across reconnections; the same surface as `Stream`.

    `thread_id`/`run_id` come from the first stream (its headers or RUN_STARTED). `last_event_id`
    is the id of the last event yielded. `close()` may be called from another thread: it ends the
    iteration quietly and stops any reconnection.
    """

    def __init__(self, open_events: EventsOpener, *, first: Stream | None = None, thread_id: str | None = None,
                 run_id: str | None = None, after: int | str | None = None,
                 max_attempts: int = DEFAULT_RESUME_ATTEMPTS, sleep: Callable[[float], Any] | None = None) -> None:
        """Read from `first`, or (without it) open the events route for `thread_id`/`run_id` after
        event id `after` at the first `next()`."""
        if max_attempts < 0:
            raise ValueError("max_attempts must be >= 0")
        if first is None and (thread_id is None or run_id is None):
            raise ValueError("without a first stream, thread_id and run_id are required")
        self._stream = first
        self._open_events = open_events
        self.max_attempts = max_attempts
        self.thread_id = first.thread_id if first is not None else thread_id
        self.run_id = first.run_id if first is not None else run_id
        self.last_event_id: str | None = None if after is None else str(after)
        #: How many times the stream was opened again after a drop.
        self.reconnects = 0
        self._delivered = 0
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._wait = sleep or self._closed.wait
        self._iterator: Iterator[AGUIEvent] = self._events()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def __iter__(self) -> Iterator[AGUIEvent]:
        return self

    def __next__(self) -> AGUIEvent:
        return next(self._iterator)

    def close(self) -> None:
        """Stop reading and release the connection. Safe to call twice and from another thread."""
        self._closed.set()
        with self._lock:
            stream = self._stream
        if stream is not None:
            stream.close()

    def __enter__(self) -> ResumingStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- the reading loop -------------------------------------------------------------------

    def _events(self) -> Iterator[AGUIEvent]:
        attempts = 0
        failure: Exception | None = None
        try:
            if self._stream is None:
                failure = self._open()
            while True:
                stream = self._stream
                if stream is not None:
                    failure = None
                    try:
                        for event in self._fresh(stream):
                            attempts = 0
                            yield event
                            if event.type in _TERMINAL:
                                return
                    except APIConnectionError as exc:
                        failure = exc
                    stream.close()
                    failure = failure or APIConnectionError("The event stream ended before the run finished.")
                if self.closed:
                    return
                if not self._can_resume() or attempts >= self.max_attempts:
                    raise failure  # type: ignore[misc]
                self._wait(retry_delay(attempts))
                attempts += 1
                if self.closed:
                    return
                logger.info("run %s: the event stream dropped after id %s; reading on", self.run_id,
                            self.last_event_id)
                failure = self._open()
                self.reconnects += 1
        finally:
            self.close()

    def _fresh(self, stream: Stream) -> Iterator[AGUIEvent]:
        """The events of `stream` not delivered before, keeping ids and the run's ids up to date."""
        for event in stream:
            self.thread_id = stream.thread_id or self.thread_id
            self.run_id = stream.run_id or self.run_id
            seq, last = _seq(stream.last_event_id), _seq(self.last_event_id)
            if seq is not None and last is not None and seq <= last:
                continue  # a replayed event this reader already has
            self.last_event_id = stream.last_event_id or self.last_event_id
            self._delivered += 1
            yield event

    def _can_resume(self) -> bool:
        """Only where the server can tell us what came next: the run is known, and either nothing
        was delivered yet (replay all) or the last delivered event had an id."""
        if self.thread_id is None or self.run_id is None:
            return False
        return self._delivered == 0 or self.last_event_id is not None

    def _open(self) -> Exception | None:
        """Open the events route after the last delivered id. A retryable failure leaves no stream
        and is returned (the loop counts it as an attempt); anything else is raised."""
        failure: Exception | None = None
        try:
            stream: Stream | None = self._open_events(self.thread_id, self.run_id, self.last_event_id)  # type: ignore[arg-type]
        except _RETRYABLE as exc:
            logger.info("run %s: reconnecting failed (%s)", self.run_id, exc.__class__.__name__)
            stream, failure = None, exc
        with self._lock:
            self._stream = stream
        if stream is not None and self.closed:  # close() came while the request was being sent
            stream.close()
        return failure
