"""Giving memory back to the system once a burst of streams is over (glibc's `malloc_trim`).

A burst of slow readers makes the process allocate a lot of short-lived buffers (events, slices
taken from feeds, encoded frames) from several threads; glibc keeps what was freed in its arenas
for reuse instead of returning it, so the resident size stays near its peak long after the burst
(see docs/operations-faults.md for the figures). When the last open stream of the process ends,
`streams_idle` asks glibc to return the free pages of every arena, on a thread of its own, at most
once per TRIM_INTERVAL. Elsewhere than glibc this does nothing.
"""
from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import time

log = logging.getLogger(__name__)

TRIM_INTERVAL = 5.0  # seconds: a trim walks every arena; once per quiet spell is enough

_open_streams = 0
_last_trim = 0.0
_trim_task: asyncio.Task | None = None


def _malloc_trim() -> bool:
    from django.conf import settings

    if not settings.MEMORY_TRIM:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.malloc_trim(0))
    except (OSError, AttributeError):  # not glibc
        return False


def stream_opened() -> None:
    global _open_streams
    _open_streams += 1


def stream_closed() -> None:
    """Called on the event loop when a stream ends; trims once no stream is open."""
    global _open_streams, _last_trim, _trim_task
    _open_streams -= 1
    if _open_streams > 0 or time.monotonic() - _last_trim < TRIM_INTERVAL:
        return
    if _trim_task is not None and not _trim_task.done():
        return
    _last_trim = time.monotonic()
    _trim_task = asyncio.get_running_loop().create_task(asyncio.to_thread(_malloc_trim))
