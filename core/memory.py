"""Giving memory back to the system once a burst of streams is over.

A burst of slow readers makes the process allocate a lot of short-lived objects and buffers (events,
slices taken from feeds, encoded frames) from several threads. Two things then keep the resident
size near its peak long after the burst (docs/operations-faults.md has the figures):

- garbage cycles: a run's tasks, futures and exceptions reference each other, so they wait for a
  full collection, which a process at rest rarely runs (14 MB of them after 50 slow readers);
- the allocators: glibc keeps freed memory in its arenas for reuse instead of returning it.

So once the process is quiet (no stream open, and nothing that registered itself busy: the run
feeds still waiting for the event log hold a burst's events, runs/stream/feeds.py), a task collects
the cycles and asks glibc to return the free pages of every arena (`malloc_trim(0)`), on a thread of
its own, at most once per TRIM_INTERVAL. Elsewhere than glibc only the collection is done.
"""
from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import logging
import time
from typing import Callable

log = logging.getLogger(__name__)

TRIM_INTERVAL = 5.0  # seconds: a trim walks every arena; once per quiet spell is enough
QUIET_CHECK = 1.0  # seconds between looks at whether the process is quiet yet

_open_streams = 0
_last_trim = 0.0
_trim_task: asyncio.Task | None = None
_busy: list[Callable[[], bool]] = []


def busy_register(check: Callable[[], bool]) -> None:
    """`check()` True while something still holds a finished burst's memory (the trim waits for it)."""
    _busy.append(check)


def _give_back() -> bool:
    from django.conf import settings

    if not settings.MEMORY_TRIM:
        return False
    gc.collect()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.malloc_trim(0))
    except (OSError, AttributeError):  # not glibc
        return False


def stream_opened() -> None:
    global _open_streams
    _open_streams += 1


def stream_closed() -> None:
    """Called on the event loop when a stream ends; once no stream is open, waits for the process to
    be quiet and then gives memory back."""
    global _open_streams, _trim_task
    _open_streams -= 1
    if _open_streams > 0:
        return
    if _trim_task is not None and not _trim_task.done():
        return
    _trim_task = asyncio.get_running_loop().create_task(_when_quiet())


def _quiet() -> bool:
    return _open_streams <= 0 and not any(check() for check in _busy)


async def _when_quiet() -> None:
    global _last_trim
    while True:
        await asyncio.sleep(QUIET_CHECK)
        if _open_streams > 0:
            return  # a new burst: the end of its last stream starts another wait
        if _quiet() and time.monotonic() - _last_trim >= TRIM_INTERVAL:
            break
    _last_trim = time.monotonic()
    await asyncio.to_thread(_give_back)
