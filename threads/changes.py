"""Telling whoever listens that a thread changed outside a run: renamed, its metadata or a component's
state set (docs/protocol.md#the-live-thread-stream). The live thread stream (runs/stream/thread_watch.py)
registers its listener when Django starts (runs/apps.py), so threads/ never imports runs/.
"""
from __future__ import annotations

from typing import Callable

_listeners: list[Callable[[str], None]] = []


def thread_changes_register(listener: Callable[[str], None]) -> None:
    """`listener(thread_id)` is called by `thread_changed`, in the writer's thread and transaction."""
    if listener not in _listeners:
        _listeners.append(listener)


def thread_changed(*, thread_id: str) -> None:
    """Called by the services that change a thread outside a run, inside their transaction if any."""
    for listener in _listeners:
        listener(thread_id)
