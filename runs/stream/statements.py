"""The statements of runs/stream/ written by hand (docs/architecture.md#the-contracts: hand-written SQL
lives in a module named `statements.py`, and a contract keeps it there), each written once: the event
log's rows (runs/stream/event_log.py), and the notifications of `CHANNEL` that wake readers in other
processes (runs/stream/follow.py listens; the event log, the thread streams and crash recovery notify).

The event log's PostgreSQL statements run on a psycopg connection of the process's own
(`EventLogConnection`, which keeps it and passes it in); the others on Django's.
"""
from __future__ import annotations

from django.db import connections
from django.utils import timezone

from core.statements import prepare, quote
from runs.models import THIS_PROCESS, Run, RunEvent

CHANNEL = "tambo_run_events"
NOTIFY_LIMIT = 7000  # bytes of run ids in one notification (PostgreSQL's limit is 8000); beyond, "*"

_INSERT = (f"INSERT INTO {quote(RunEvent._meta.db_table)} (run_id, seq, data, final, created_at) "
           "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING")

# ON CONFLICT: a write that committed but whose answer was lost is tried again harmlessly.
# The arrays go in binary (%b; this connection binds on the server): psycopg's text form escapes each
# element in Python, 17 µs for an event's JSON against 0.3 µs (11 % of a serving process's CPU at
# 1,000 streams of a word a second: docs/benchmarks.md#several-hosts).
_WRITE_AND_NOTIFY = f"""WITH written AS (
                    INSERT INTO {RunEvent._meta.db_table} (run_id, seq, data, final, created_at)
                    SELECT t.run_id, seq, data, final, %s
                    FROM unnest(%b::varchar[], %b::int[], %b::text[], %b::bool[]) AS t(run_id, seq, data, final)
                    WHERE EXISTS (SELECT 1 FROM {Run._meta.db_table} r WHERE r.id = t.run_id
                                  AND (r.owner IS NULL OR r.owner = %s))
                    ON CONFLICT DO NOTHING RETURNING 1)
                SELECT pg_notify(%s, %s) WHERE EXISTS (SELECT 1 FROM written)"""

_EVENTS_AFTER = f"""SELECT c.run_id, e.seq, e.data, e.final, r.status, r.finished_at
                FROM unnest(%b::varchar[], %b::int[]) AS c(run_id, after)
                LEFT JOIN {Run._meta.db_table} r ON r.id = c.run_id
                LEFT JOIN LATERAL (SELECT seq, data, final FROM {RunEvent._meta.db_table}
                                   WHERE run_id = c.run_id AND seq > c.after OFFSET 0) e ON true
                ORDER BY c.run_id, e.seq"""
# LATERAL with OFFSET 0 (which keeps the planner from flattening it into a join): each run's events
# read from its (run_id, seq) index. A plain join let the planner hash the
# whole event log instead: 70 ms a read for 500 followed runs, a core of PostgreSQL's in all when a
# killed host's runs were followed from elsewhere (docs/benchmarks.md#several-hosts).


def events_insert(rows: list[tuple[str, int, str, bool]]) -> None:
    """Stores (run id, seq, JSON, final) rows in one executemany on Django's connection (SQLite's way:
    one process, nobody to notify)."""
    connection = connections["default"]
    now = prepare(RunEvent._meta.get_field("created_at"), timezone.now(), connection)
    with connection.cursor() as cursor:
        cursor.executemany(_INSERT, [(r, s, d, f, now) for r, s, d, f in rows])


async def events_write_notify(conn, rows: list[tuple[str, int, str, bool]], run_ids: str) -> None:
    """On the psycopg connection `conn`: stores the rows of runs this process still owns (the lease's
    fence) and notifies CHANNEL with `run_ids` ("*" when longer than NOTIFY_LIMIT), in one statement."""
    await _fetch(conn, _WRITE_AND_NOTIFY, [
        timezone.now(), [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows],
        THIS_PROCESS, CHANNEL, run_ids if len(run_ids) <= NOTIFY_LIMIT else "*"])


async def events_after(conn, cursors: dict[str, int]) -> list[tuple]:
    """On the psycopg connection `conn`, in one query: for each {run id: last id held}, the run's
    (run id, seq, data, final, status, finished_at) rows after it, or one row with no event."""
    ids = list(cursors)
    return await _fetch(conn, _EVENTS_AFTER, [ids, [cursors[i] for i in ids]])


async def _fetch(conn, sql: str, params: list) -> list[tuple]:
    cursor = await conn.execute(sql, params)
    return await cursor.fetchall() if cursor.description else []


def channel_notify(payload: str) -> None:
    """NOTIFY CHANNEL with `payload` on Django's connection (PostgreSQL): delivered when the caller's
    transaction commits, at once outside one."""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, payload])


async def channel_listen(conn) -> None:
    """LISTEN to CHANNEL on the psycopg connection `conn` (autocommit: it takes effect at once)."""
    await conn.execute(f"LISTEN {CHANNEL}")
