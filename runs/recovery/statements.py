"""The statements of runs/recovery/ written by hand (docs/architecture.md#the-contracts: hand-written SQL
lives in a module named `statements.py`, and a contract keeps it there): the expired-lease sweep on
PostgreSQL (runs/recovery/leases.py `expired_lease_sweep` decides when and with what; SQLite's sweep is the
ORM's, a few statements in one IMMEDIATE transaction).
"""
from __future__ import annotations

from django.db import connection

from projects.secrets import STORED_PREFIX
from runs.models import Run, RunEvent
from runs.stream.statements import CHANNEL, NOTIFY_LIMIT
from threads.models import Message, RunStatus, Thread

_thread_t, _run_t, _message_t = Thread._meta.db_table, Run._meta.db_table, Message._meta.db_table
_event_t = RunEvent._meta.db_table
_SWEEP = f"""
        WITH dead AS (
            SELECT id, current_run_id FROM {_thread_t}
            WHERE run_status <> %(idle)s AND lease_expires_at < %(now)s
              AND (lease_expires_at < %(unclaimed)s OR current_run_id NOT IN (
                  SELECT id FROM {_run_t} WHERE resume IS NOT NULL AND takeover_count < %(takeover_limit)s
                  AND NOT cancel_requested))
            ORDER BY lease_expires_at LIMIT %(batch)s FOR UPDATE SKIP LOCKED
        ), freed AS (
            UPDATE {_thread_t} AS t SET run_status = %(idle)s, current_run_id = NULL, lease_expires_at = NULL,
                status_message = NULL, last_run_cancelled = NULL, last_run_error = %(error)s::jsonb,
                updated_at = %(now)s
            FROM dead WHERE t.id = dead.id
            RETURNING t.id AS thread_id, dead.current_run_id AS run_id
        ), failed AS (
            UPDATE {_run_t} AS r SET status = 'failed', error_code = %(code)s, error_message = %(message)s,
                finished_at = %(now)s
            FROM freed WHERE r.id = freed.run_id AND r.status <> ALL(%(final)s)
            RETURNING r.id, r.thread_id, r.partial_message_id, r.partial_text
        ), saved AS (
            INSERT INTO {_message_t} (id, thread_id, run_id, role, content, is_cancelled, component_state,
                                     created_at)
            SELECT f.partial_message_id, f.thread_id, f.id, 'assistant',
                   jsonb_build_array(jsonb_build_object('type', 'text', 'text', f.partial_text)), true,
                   '{{}}'::jsonb, %(now)s
            FROM failed AS f
            WHERE f.partial_message_id IS NOT NULL AND f.partial_text <> ''
              AND f.partial_text NOT LIKE %(sealed)s
              AND NOT EXISTS (SELECT 1 FROM {_message_t} AS m WHERE m.id = f.partial_message_id)
            RETURNING id
        ), logged AS (
            INSERT INTO {_event_t} (run_id, seq, data, final, created_at)
            SELECT f.id, COALESCE(max(e.seq), 0) + 1, %(dead_event)s, true, %(now)s
            FROM failed AS f LEFT JOIN {_event_t} AS e ON e.run_id = f.id
            GROUP BY f.id HAVING NOT COALESCE(bool_or(e.final), false)
            ON CONFLICT DO NOTHING
            RETURNING run_id
        ), woken AS (
            SELECT pg_notify(%(channel)s, CASE WHEN length(ids) > %(notify_limit)s THEN '*' ELSE ids END)
            FROM (SELECT string_agg(run_id, ',') AS ids FROM logged) AS l WHERE ids IS NOT NULL
        )
        SELECT (SELECT count(*) FROM freed), (SELECT count(*) FROM saved), (SELECT count(*) FROM woken),
               (SELECT array_agg(f.id) FROM failed AS f WHERE f.partial_message_id IS NOT NULL
                AND f.partial_text LIKE %(sealed)s)
"""


def expired_leases_free(*, now, batch: int, error: str, code: str, message: str, final: list[str], dead_event: str,
                        unclaimed, takeover_limit: int) -> tuple[int, list[str] | None]:
    """One statement (data-modifying CTEs) for up to `batch` threads whose lease expired before `now`
    (of a run a takeover may still go on with, only once the lease ended before `unclaimed`), skipping
    rows another transaction holds: each freed with `error` (JSON) as its last run error, its run
    failed with `code` and `message` unless already in a `final` status, the run's checkpointed text
    stored as a cancelled assistant message (unless encrypted, or stored already), `dead_event` logged
    as the run's final event unless it has one, and CHANNEL notified of the runs logged. Answers (the
    threads freed, the ids of failed runs whose checkpoint is encrypted and is left to the caller)."""
    params = {"idle": RunStatus.IDLE.value, "now": now, "batch": batch, "error": error, "code": code,
              "message": message, "final": final, "dead_event": dead_event, "channel": CHANNEL,
              "notify_limit": NOTIFY_LIMIT, "unclaimed": unclaimed, "takeover_limit": takeover_limit,
              "sealed": STORED_PREFIX + "%"}
    with connection.cursor() as cursor:
        cursor.execute(_SWEEP, params)
        freed, _saved, _woken, sealed = cursor.fetchone()
    return freed, sealed
