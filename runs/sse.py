"""AG-UI events → SSE bytes. Each event is encoded once; ready events are written together."""
from __future__ import annotations

import time

from ag_ui.core import BaseEvent


def encode_event(event: BaseEvent) -> bytes:
    if event.timestamp is None:
        event.timestamp = int(time.time() * 1000)
    return b"data: " + event.model_dump_json(by_alias=True, exclude_none=True).encode() + b"\n\n"


SSE_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}
