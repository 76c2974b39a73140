"""Encoding a run's events for its transport without letting a failure there escape the run.

The advance loop (runs/loop.py) ends every run with exactly one terminal event and releases the lock
on every path it knows of. A failure in the consumer (encoding an event, handing its bytes on) would
otherwise leave the loop suspended at a `yield`, never finished: no RUN_ERROR, the lock held until
its lease ran out. Here such a failure is thrown back into the loop at that `yield`, so the loop ends
the run through its own failure path (the unsaved step stored, the run failed, the lock released)
and yields its RUN_ERROR. When even a terminal event cannot be encoded, the run has already been
recorded and released (the loop records before it yields a terminal event), and a fixed RUN_ERROR
goes out instead.
"""
from __future__ import annotations

import json
import logging
import time
from typing import AsyncGenerator, Callable

from ag_ui.core import BaseEvent, RunErrorEvent, RunFinishedEvent

from runs.stream.sse import encode_event

log = logging.getLogger(__name__)


def fallback_run_error() -> bytes:
    body = {"type": "RUN_ERROR", "message": "An internal error occurred.", "code": "INTERNAL_ERROR",
            "category": "server_error", "isRetryable": True, "timestamp": int(time.time() * 1000)}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


async def encode_into(events: AsyncGenerator[BaseEvent, None],
                      put: Callable[[bytes, BaseEvent | None], None]) -> None:
    """Encodes each of the run's events and hands the bytes, with the event, to `put`, until the run
    ends (the fixed RUN_ERROR goes with no event).

    Exactly one terminal event's bytes are handed on (or the fixed RUN_ERROR). Raises only what the
    run itself raises (cancellation).
    """
    thrown: Exception | None = None
    while True:
        try:
            event = await (events.athrow(thrown) if thrown is not None else events.__anext__())
        except StopAsyncIteration:
            return
        except Exception:  # noqa: BLE001 - the run did not take the failure back: it is over
            log.exception("A run could not end after a failure in its transport")
            put(fallback_run_error(), None)
            return
        thrown = None
        try:
            put(encode_event(event), event)
        except Exception as exc:  # noqa: BLE001 - handed to the run, which ends itself
            log.exception("Could not encode or send a run's %s event", event.type)
            if isinstance(event, (RunFinishedEvent, RunErrorEvent)):
                put(fallback_run_error(), None)
                await events.aclose()
                return
            thrown = exc
