"""When the psycopg pool checks a connection with a round trip before handing it out
(docs/performance.md#bursts-of-starts-issue-40).

Django's pool with CONN_HEALTH_CHECKS checks every connection it hands out with an empty query
(`ConnectionPool.check_connection`): one round trip per database call, a fifth of the database
threads' work under 50 runs started together. What it guards against is a connection that died
while it sat in the pool (a database restart or failover, a proxy or firewall that dropped it),
which would otherwise fail the call it is handed to (tests/runs/test_outage.py). The round trip is
kept for the connections that may have died that way, and only for them:

- the server sent something while the connection sat idle: a restart, a failover or an
  administrator's `pg_terminate_backend` sends an error and closes the socket, so the socket is
  readable (one poll(2) that does not wait). An idle connection that listens to nothing is owed
  nothing (the LISTEN connection of runs/stream/follow.py is not pooled);
- it was neither made nor handed out for DB_POOL_CHECK_IDLE seconds: a middlebox may have
  dropped it silently;
- a database call or a connection attempt failed for a connection-level reason since it was last
  handed out (core/db.py, core/db_health.py): its siblings may have died the same way.

A connection that fails the check is discarded by the pool, which hands out another, but only after
a pause: psycopg_pool 3.3 backs off 1, 2, 4 … s between failed checks of one request, so after a
restart that cut n idle connections the first request waited 1 + 2 + … s for them (3 s with two,
a PoolTimeout with three: seen in CI). So before each hand-out the pool drops every idle connection
the server spoke on, in one poll (`spoken`, core/pg_backend/base.py `Pool`), and asks for new ones:
the request waits for a fresh connection (milliseconds), not for the back-off.
"""
from __future__ import annotations

import select
import time

from django.conf import settings

_failed_at = float("-inf")  # monotonic time of the last connection-level failure (connection_failed)


def connection_failed() -> None:
    """Marks every connection handed out before now as suspect: the next hand-out of each is
    checked with a round trip. Called on a connection-level failure of a database call or of a
    connection attempt. Thread-safe (one float assignment)."""
    global _failed_at
    _failed_at = time.monotonic()


def connection_check(conn) -> None:
    """psycopg_pool's `check` callback: returns quietly to hand `conn` out, raises to discard it.

    Runs on the thread asking for a connection, with the connection not shared with any other."""
    from psycopg_pool import ConnectionPool

    now = time.monotonic()
    alive_at = getattr(conn, "alive_at", None)  # made or last handed out (core/db_health.py WatchedConnection)
    if (alive_at is None or now - alive_at > settings.DB_POOL_CHECK_IDLE or alive_at <= _failed_at
            or peer_spoke(conn)):
        ConnectionPool.check_connection(conn)
    conn.alive_at = now


def spoken(conns) -> list:
    """Those of `conns` (idle pooled connections) that `peer_spoke`, in one poll(2) that does not
    wait: after a database restart, every one of them."""
    poller, by_fd, found = select.poll(), {}, []
    for conn in conns:
        if conn.closed or conn.broken:
            found.append(conn)
        else:
            by_fd[conn.fileno()] = conn
            poller.register(conn.fileno(), select.POLLIN | select.POLLPRI)  # POLLHUP and POLLERR always
    return found + [by_fd[fd] for fd, _ in poller.poll(0)] if by_fd else found


def peer_spoke(conn) -> bool:
    """Whether the server sent anything, or closed the connection, since it was last read: the
    socket is readable, hung up or in error (no wait). A connection psycopg already knows is
    closed or broken counts as one that spoke."""
    return bool(spoken([conn]))
