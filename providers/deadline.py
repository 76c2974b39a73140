"""How long a vendor may take over one call, in total (docs/configuration.md, docs/operations-faults.md).

The HTTP timeout a provider's client is given (OPENAI_TIMEOUT) is per read: a vendor that sends one
byte, one SSE comment or one empty chunk every few seconds resets it forever, and so would hold a run,
its thread's lock and a gateway request without end. These deadlines count what a caller gets, not
bytes:

- `call`: a non-streamed call (a thread's name, suggestions, a memory extraction), from sending it
  to its whole answer; and a streamed step, from sending it to its first delta (text, reasoning,
  a tool call's fragment). Comments, pings and chunks that carry nothing do not count.
- `idle`: a streamed step's longest wait for its next delta once it has begun, however long the
  answer, so a long answer that keeps coming is never cut, and one that stops coming ends.
- `stream`: a streamed step, whole: the bound on a vendor that streams forever (0: none).

A call past one ends with ModelError `LLM_SERVER_ERROR` "did not answer in time", retryable (a
project's fallback is tried when nothing was shown yet), its connection dropped.
This module does not import Django.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from providers.base import ModelError

log = logging.getLogger(__name__)

MSG_TIMEOUT = "The model provider did not answer in time."


@dataclass(frozen=True)
class Deadlines:
    call: float = 120.0
    idle: float = 60.0
    stream: float = 1800.0


def deadline_error(what: str, seconds: float) -> ModelError:
    """The ModelError of a call past its deadline; the log says which one (the message never does)."""
    log.warning("A model call ended: %s took more than %g s", what, seconds)
    # The vendor had the request: the prompt it read is charged (ModelError.accepted).
    return ModelError("LLM_SERVER_ERROR", MSG_TIMEOUT, retryable=True, accepted=True)


class StreamClock:
    """The deadlines of one streamed step, on the running loop's clock. `wait_until()` is when the next
    wait for the vendor must end; `delivered()` after each delta that reached the caller."""

    def __init__(self, deadlines: Deadlines) -> None:
        self._deadlines = deadlines
        self._loop = asyncio.get_running_loop()
        started = self._loop.time()
        self._end = started + deadlines.stream if deadlines.stream > 0 else None
        self._first_by = started + deadlines.call if deadlines.call > 0 else None
        self._began = False
        self._idle_by: float | None = None

    def delivered(self) -> None:
        self._began = True
        if self._deadlines.idle > 0:
            self._idle_by = self._loop.time() + self._deadlines.idle

    def wait_until(self) -> float | None:
        """The loop time the next wait ends at (None: no deadline)."""
        near = self._idle_by if self._began else self._first_by
        candidates = [when for when in (near, self._end) if when is not None]
        return min(candidates) if candidates else None

    def error(self) -> ModelError:
        now = self._loop.time()
        if self._end is not None and now >= self._end:
            return deadline_error("the whole streamed answer (MODEL_STREAM_DEADLINE)", self._deadlines.stream)
        if self._began:
            return deadline_error("the wait for the next delta (MODEL_IDLE_SECONDS)", self._deadlines.idle)
        return deadline_error("the wait for the first delta (MODEL_CALL_DEADLINE)", self._deadlines.call)


async def within_call_deadline(call, deadlines: Deadlines):
    """`await call` (a non-streamed call's coroutine) within `deadlines.call`, else the deadline's ModelError."""
    if deadlines.call <= 0:
        return await call
    timer = asyncio.timeout(deadlines.call)
    try:
        async with timer:
            return await call
    except TimeoutError as exc:
        if not timer.expired():
            raise
        raise deadline_error("a non-streamed call (MODEL_CALL_DEADLINE)", deadlines.call) from exc
