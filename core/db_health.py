"""Whether the database is known to be down, so that requests are answered 503 at once (docs/protocol.md#design-for-scale).

Without this, every request during an outage waited for a connection until DB_POOL_TIMEOUT, on one of
the DB_THREADS database threads: 20 run requests got their 503 after 5 to 25 s, and a run whose store
failed told its client 20 s after its last delta. Now the first failure marks the database down:

- a connection attempt of the pool that fails (`WatchedConnection`, the pool's connection class:
  a refused connection is known within milliseconds, long before a caller's pool wait ends), or
- a database call that got no connection from the pool in time (core/db.py; a database that hangs
  instead of refusing is known that way).

While it is down, database calls and API requests are refused at once (DatabaseUnavailable: 503 with
Retry-After). One background thread probes the database with a fresh connection of its own every
PROBE_INTERVAL seconds and marks it up on the first success; the pool then reconnects on demand.

PostgreSQL with the pool only (DB_POOL_SIZE > 0): SQLite's "database is locked" is one call's bad
luck, not an outage, and without the pool every connection is the caller's own attempt.
"""
from __future__ import annotations

import logging
import threading
import time

from core import pool_check

log = logging.getLogger(__name__)

PROBE_INTERVAL = 0.5  # seconds between probes while the database is down
PROBE_TIMEOUT = 2  # seconds a probe's connection attempt may take (libpq's connect_timeout)

_lock = threading.Lock()
_down_since: float | None = None
_prober: threading.Thread | None = None


def known_down() -> bool:
    return _down_since is not None


def mark_down(reason: str) -> None:
    """Records that the database failed; starts the prober if it is not running. Thread-safe."""
    global _down_since, _prober
    with _lock:
        if _down_since is None:
            _down_since = time.monotonic()
            log.warning("Database marked down (%s): requests are answered 503 until it answers again", reason)
        if _prober is None or not _prober.is_alive():
            _prober = threading.Thread(target=_probe_until_up, name="tambo-db-probe", daemon=True)
            _prober.start()


def mark_up() -> None:
    global _down_since
    with _lock:
        if _down_since is not None:
            log.warning("Database answers again after %.1f s", time.monotonic() - _down_since)
        _down_since = None


def is_outage(exc: BaseException) -> bool:
    """Whether `exc` (or what it was raised from) says the database is unreachable: the pool handed
    out no connection in time. A connection lost in the middle of a call is not enough: after the
    database returns, the pool's stale connections fail that way once each, and the next connection
    attempt says whether the database is really away (`WatchedConnection`)."""
    try:
        import psycopg_pool
    except ImportError:  # pragma: no cover - SQLite-only installs
        return False
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, psycopg_pool.PoolTimeout):
            return True
        exc, seen = exc.__cause__, seen + 1
    return False


def _fail_pool_waiters() -> None:
    """Ends the wait of every caller waiting for a pooled connection, with the PoolTimeout it would
    have got DB_POOL_TIMEOUT later: the pool just failed to connect, so none is coming soon.

    psycopg_pool has no public call for this (only `close()` fails its waiters); this takes its
    queue of waiters under its lock as `close()` does (psycopg_pool 3.3)."""
    import psycopg_pool
    from django.db import connections

    pool = getattr(connections["default"], "pool", None)
    if pool is None or not hasattr(pool, "_waiting"):
        return
    with pool._lock:
        waiting = list(pool._waiting)
        pool._waiting.clear()
    for client in waiting:
        client.fail(psycopg_pool.PoolTimeout("the database cannot be reached"))


def _probe_until_up() -> None:
    global _prober
    while known_down():
        time.sleep(PROBE_INTERVAL)
        if _probe():
            mark_up()
    with _lock:
        _prober = None


def _probe() -> bool:
    import psycopg
    from django.db import connections

    from core.statements import connection_ping

    params = connections["default"].get_connection_params()
    params["connect_timeout"] = PROBE_TIMEOUT
    try:
        with psycopg.connect(**params, autocommit=True) as conn:
            connection_ping(conn)
        return True
    except Exception:  # noqa: BLE001 - any failure: still down
        return False


try:
    import psycopg

    class WatchedConnection(psycopg.Connection):
        """The pool's connection class: a failed connection attempt marks the database down."""

        # When it was last known to work: made, or handed out by the pool (core/pool_check.py).
        alive_at: float | None = None

        @classmethod
        def connect(cls, *args, **kwargs):
            try:
                connection = super().connect(*args, **kwargs)
            except psycopg.OperationalError as exc:
                pool_check.connection_failed()
                mark_down(f"connecting failed: {type(exc).__name__}")
                _fail_pool_waiters()
                raise
            connection.alive_at = time.monotonic()
            return connection
except ImportError:  # pragma: no cover - SQLite-only installs
    WatchedConnection = None  # type: ignore[assignment,misc]
