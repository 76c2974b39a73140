"""The run event log (docs/protocol.md#resumable-runs): what a run's stream sent, for readers that join late or on
another process. Synchronous; called through db_call (core/db.py).

Written in batches, never per event: the new events of all the runs a process streams go in one
statement (runs/stream/feeds.py Flusher); on PostgreSQL (`EventLogConnection.write`) the same statement notifies
`CHANNEL` with the ids of those runs, so other processes' readers wake (runs/stream/follow.py) and read the
new rows of all the runs they follow with one `EventLogConnection.poll`. `event_log_cleanup`, run by the watcher, removes
the rows of runs that ended more than RUN_REPLAY_SECONDS ago. The statements themselves are
runs/stream/statements.py's.
"""
from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import psycopg
from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from psycopg.conninfo import make_conninfo

from runs.models import Run, RunEvent
from runs.stream import statements
from threads.sealing import open_text

# A run row that ended this long ago with no final event logged will never get one (its process
# died before writing it, or it ran before the log existed): its readers end.
ORPHAN_SECONDS = 10.0
# Rows of a run that never logged a final event go after this long.
STALE_ROWS = timedelta(days=1)
_ENDED = (Run.Status.AWAITING_INPUT, Run.Status.COMPLETED, Run.Status.CANCELLED, Run.Status.FAILED)


def event_log_write(rows: list[tuple[str, int, str, bool]]) -> None:
    """Stores (run id, seq, JSON, final) rows in one executemany, through db_call: SQLite's way (one
    process, nobody to notify). PostgreSQL's is `EventLogConnection.write`.

    A statement written once, not `bulk_create`: building a model instance per event cost the
    stream about 8 µs per delta. ON CONFLICT: a batch written again after a lost answer is harmless."""
    statements.events_insert(rows)


def event_log_read(*, run_id: str, after: int, upto: int | None = None, limit: int) -> list[tuple[int, str, bool]]:
    """The first `limit` logged events of a run after id `after` (up to `upto`): (seq, JSON, final)."""
    rows = RunEvent.objects.filter(run_id=run_id, seq__gt=after)
    if upto is not None:
        rows = rows.filter(seq__lte=upto)
    rows = rows.order_by("seq").values_list("seq", "data", "final")[:limit]
    return [(seq, open_text(data), final) for seq, data, final in rows]


def _poll_result(result: list[tuple]) -> tuple[dict[str, list[tuple[int, str, bool]]], set[str]]:
    events: dict[str, list[tuple[int, str, bool]]] = {}
    finished: dict[str, tuple[str | None, datetime | None]] = {}
    for run_id, seq, data, final, status, finished_at in result:
        finished[run_id] = (status, finished_at)
        if seq is not None:
            events.setdefault(run_id, []).append((seq, open_text(data), final))
    over = {rid for rid, (status, finished_at) in finished.items()
            if not any(f for _, _, f in events.get(rid, ())) and _orphaned(status, finished_at)}
    return events, over


class EventLogConnection:
    """The process's own connection for the event log on PostgreSQL: its writes and its polls.

    Not one of the bounded pool's (core/db.py): the writes are what readers on other processes wait
    for, so they must not queue behind request work on the database threads. Async (psycopg), in
    autocommit, without server-side prepared statements (a transaction-pooling proxy may stand in
    between); one statement at a time. A failed statement drops the connection; the next one
    reconnects.
    """

    def __init__(self) -> None:
        self._conn = None
        self._loop = None

    async def write(self, rows: list[tuple[str, int, str, bool]], also: list[str] = ()) -> None:
        """Stores (run id, seq, JSON, final) rows and notifies CHANNEL with their runs' ids and the
        `also` ids (their threads', for the live thread streams) ("*" when they are too many to list),
        in one statement. Rows of a run another process took over are not stored (the lease's fence:
        docs/operations.md#takeover)."""
        run_ids = ",".join(dict.fromkeys([*(r for r, _, _, _ in rows), *also]))
        await self._run(statements.events_write_notify, rows, run_ids)

    async def poll(self, cursors: dict[str, int]) -> tuple[dict[str, list[tuple[int, str, bool]]], set[str]]:
        """For runs followed from another process ({run id: last id held}), in one query: their new
        events, and the runs that will log no more (gone, or ended ORPHAN_SECONDS ago without a
        final event)."""
        return _poll_result(await self._run(statements.events_after, cursors))

    async def close(self) -> None:
        """Closes the connection if this event loop opened it (its tasks are being cancelled: the
        loop is ending, as at the end of an in-process test)."""
        if self._conn is not None and self._loop is asyncio.get_running_loop():
            conn, self._conn = self._conn, None
            await conn.close()

    async def _run(self, statement, *args):
        """`await statement(connection, *args)` (runs/stream/statements.py) on this process's connection."""
        loop = asyncio.get_running_loop()
        if self._conn is None or self._conn.closed or self._loop is not loop:
            self._conn = await psycopg.AsyncConnection.connect(_conninfo(), autocommit=True, prepare_threshold=None)
            self._loop = loop
        try:
            return await statement(self._conn, *args)
        except Exception:
            conn, self._conn = self._conn, None
            try:
                await conn.close()
            except Exception:  # noqa: BLE001 - it is being dropped
                pass
            raise


def _conninfo() -> str:
    db = settings.DATABASES["default"]
    parts = {"dbname": db.get("NAME"), "user": db.get("USER"), "password": db.get("PASSWORD"),
             "host": db.get("HOST"), "port": db.get("PORT")}
    return make_conninfo(**{k: str(v) for k, v in parts.items() if v})


event_log_connection = EventLogConnection()


def _orphaned(status: str | None, finished_at: datetime | None) -> bool:
    if status is None:
        return True  # the run is gone (its thread was deleted)
    return status in _ENDED and finished_at is not None and (
        timezone.now() - finished_at).total_seconds() > ORPHAN_SECONDS


def event_log_cleanup() -> int:
    """Deletes the rows of runs whose final event was logged more than RUN_REPLAY_SECONDS ago (and
    rows older than a day, of runs that never logged one); one statement; returns rows deleted."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.RUN_REPLAY_SECONDS)
    over = RunEvent.objects.filter(final=True, created_at__lt=cutoff).values("run_id")
    deleted, _ = RunEvent.objects.filter(Q(run_id__in=over) | Q(created_at__lt=now - STALE_ROWS)).delete()
    return deleted


def replay_ended(run: Run) -> bool:
    """Whether the run ended more than RUN_REPLAY_SECONDS ago: no replay then."""
    return run.status in _ENDED and run.finished_at is not None and (
        timezone.now() - run.finished_at).total_seconds() > settings.RUN_REPLAY_SECONDS


def run_orphaned(run: Run) -> bool:
    return _orphaned(run.status, run.finished_at)
