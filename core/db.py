"""The run path's database calls: a small bounded set of worker threads (docs/protocol.md#design-for-scale).

Under Django's ASGI handler, `sync_to_async` runs a request's database work on a thread of its
own that keeps its connection until the response ends; a streaming run would then hold a
connection (and a thread) for as long as it streams. `db_call` instead runs a synchronous function
on one of `DB_THREADS` shared worker threads and gives the connection back as soon as it returns:

- on PostgreSQL with the pool on (`DB_POOL_SIZE` > 0), the connection goes back to the psycopg
  pool, so the process never holds more than `DB_POOL_SIZE` connections;
- otherwise (SQLite, or PostgreSQL behind PgBouncer with the pool off) each worker keeps its one
  connection, so the process holds at most `DB_THREADS` of them on the run path.

A database that is down, refuses connections or has no connection left in the pool within
`DB_POOL_TIMEOUT` raises `DatabaseUnavailable`: a Problem answered 503 with `Retry-After`. Such a
failure marks the database down (core/db_health.py): until it answers again every call raises
`DatabaseUnavailable` at once, also the calls already queued for a thread, instead of each waiting
for the pool.
Nothing here is held while a run waits on the model: a call takes a thread only while it runs.
The renewal of the runs' leases does not queue here behind request work: it has a thread and a
connection of its own (`connection_own`; runs/renewal.py).
"""
from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections

from core import db_health, pool_check
from core.problems import DatabaseUnavailable, is_database_unavailable

log = logging.getLogger(__name__)
T = TypeVar("T")

_executor: ThreadPoolExecutor | None = None
# Set when tracing is on (telemetry/tracing.py): the worker then runs in the caller's context, so a
# statement's span nests under the run or request that asked for it. Off, nothing is copied.
propagate_context = False
_executor_lock = threading.Lock()


def executor() -> ThreadPoolExecutor:
    """The process's database worker threads (created on first use, `DB_THREADS` of them)."""
    global _executor
    if _executor is None:
        with _executor_lock:
            if _executor is None:
                _executor = ThreadPoolExecutor(max_workers=settings.DB_THREADS, thread_name_prefix="tambo-db")
    return _executor


async def db_call(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Runs `fn(*args, **kwargs)` on a database worker thread and returns its result.

    The connection is returned (to the pool, or kept by the worker where there is no pool) before
    the result is handed back. Raises DatabaseUnavailable for connection-level failures, and
    whatever else `fn` raises. Cancelling the awaiting task does not stop `fn` once it started.
    """
    loop = asyncio.get_running_loop()
    call = functools.partial(_in_worker, fn, args, kwargs)
    if propagate_context:
        call = functools.partial(contextvars.copy_context().run, call)
    return await loop.run_in_executor(executor(), call)


def run_sync(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`fn` with the same connection handling and error mapping as `db_call`, in the calling thread
    (tests and synchronous callers that want the same contract)."""
    return _in_worker(fn, args, kwargs)


def _in_worker(fn: Callable[..., T], args: tuple, kwargs: dict) -> T:
    if db_health.known_down():
        raise DatabaseUnavailable()  # checked here, not when queued: a queued call was waiting too
    try:
        return fn(*args, **kwargs)
    except (OperationalError, InterfaceError) as exc:
        # Connection refused or lost, pool exhausted (psycopg_pool.PoolTimeout), SQLite's "database
        # is locked": all say "not now", none is the caller's fault or a bug.
        pool_check.connection_failed()  # the pooled connections handed out before may be dead too
        if db_health.is_outage(exc):
            db_health.mark_down(type(exc.__cause__ or exc).__name__)
        raise DatabaseUnavailable() from exc
    finally:
        release_connections()


def release_connections() -> None:
    """Gives this thread's connections back: to the pool when pooled; otherwise keeps a usable
    connection for the thread's next call and closes a broken one."""
    for conn in connections.all(initialized_only=True):
        if conn.connection is None:
            continue
        if conn.in_atomic_block:
            continue  # a caller's transaction is still open (never the case for db_call's own calls)
        if getattr(conn, "pool", None) is not None:
            conn.close()
        elif conn.errors_occurred and not conn.is_usable():
            conn.close()
        else:
            conn.errors_occurred = False


def connection_own() -> None:
    """Gives the calling thread a connection of its own to the default database, outside the pool:
    for a lane that must never wait for a pooled connection (runs/renewal.py). Only PostgreSQL with
    the pool on needs it; elsewhere a thread's connection is its own already. Opened on first use
    and kept: the thread closes it (`connections.close_all()`) after a failure and when it ends."""
    options = connections.settings[DEFAULT_DB_ALIAS].get("OPTIONS", {})
    if not options.get("pool"):
        return
    own = connections.create_connection(DEFAULT_DB_ALIAS)
    own.settings_dict = {**own.settings_dict, "OPTIONS": {k: v for k, v in options.items() if k != "pool"}}
    connections[DEFAULT_DB_ALIAS] = own


def log_db_failure(what: str, exc: Exception) -> None:
    """Logs a failed background database call (the watcher's tick, the event log): during an outage
    it fails several times a second, so that is one line with no trace."""
    if is_database_unavailable(exc):
        log.warning("%s: database unavailable (%s)", what, type(exc).__name__)
    else:
        log.error(what, exc_info=exc)
