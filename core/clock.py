"""A per-process clock that never returns the same instant twice.

Messages are ordered by (created_at, id) and ids are random, so two messages written in the same
microsecond would otherwise come back in a random order. Within one process (and a thread's writes
all happen under its run lock, in one process) this keeps insertion order.
"""
import threading
from datetime import timedelta

from django.utils import timezone

_lock = threading.Lock()
_last = None


def now_unique():
    global _last
    with _lock:
        now = timezone.now()
        if _last is not None and now <= _last:
            now = _last + timedelta(microseconds=1)
        _last = now
        return now
