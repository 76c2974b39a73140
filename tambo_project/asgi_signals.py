"""No thread per open stream for Django's request-start bookkeeping, under ASGI only.

Django connects synchronous receivers to `request_started` (reset_queries, close_old_connections);
the ASGI handler runs them through `sync_to_async`, which starts a thread for the request that
then lives as long as the request: for a stream, as long as it is open. Under ASGI each request's
sync code runs on a fresh thread of its own (asgiref's ThreadSensitiveContext) that has no
connection yet, so there is nothing to reset when a request starts. `request_finished` is left
alone: it runs inside `response.close()` on that thread, where the request's connections are.
The run path's own database work is on the shared database threads (core/db.py).
"""
from __future__ import annotations

from django.core import signals
from django.db import close_old_connections, reset_queries


def install() -> None:
    """Disconnects Django's request_started receivers (idempotent)."""
    signals.request_started.disconnect(reset_queries)
    signals.request_started.disconnect(close_old_connections)
