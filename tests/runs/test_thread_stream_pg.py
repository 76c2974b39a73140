"""The live thread stream across two uvicorn processes on one PostgreSQL (docs/protocol.md#the-live-thread-stream):
a run started through process A streams on a thread stream opened on process B, with Last-Event-ID
resume there; renames made through A reach B; open streams hold no database connection.
"""
from __future__ import annotations

import psycopg
import pytest

from tests.conftest import Api, require_part
from tests.runs.test_thread_stream import Watcher, finished, named
from tests.support.live import LiveServer
from tests.support.pg_cluster import migrated_cluster, pg_bin
from tests.support.sse import read_events

LONG = "Tell me everything about it. " * 25


@pytest.fixture(scope="module")
def cluster():
    require_part(pg_bin() is not None, "PostgreSQL 15 server binaries (apt-get install postgresql-15)")
    with migrated_cluster() as found:
        yield found


@pytest.fixture(scope="module")
def apis(cluster):
    pg, key = cluster
    env = {"DATABASE_URL": pg.url, "OFFLINE_MODEL_DELAY": "0.01", "DB_POOL_SIZE": "4"}
    a, b = LiveServer("thread-stream-a", env), LiveServer("thread-stream-b", env)
    yield Api(a.url, key), Api(b.url, key)
    a.stop()
    b.stop()


def body(text: str, **extra) -> dict:
    return {"userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": text}]}, **extra}


def run_on(api: Api, thread_id: str, text: str, previous: str | None) -> list[dict]:
    response = api.post(f"/v1/threads/{thread_id}/runs", body(text, previousRunId=previous), stream=True)
    assert response.status_code == 200, response.text
    return read_events(response)


def test_a_run_started_on_one_process_streams_on_a_thread_stream_of_the_other(apis):
    a, b = apis
    started = a.post("/v1/threads/runs", body("hello"), stream=True)
    thread_id = started.headers["X-Thread-Id"]
    first_run = started.headers["X-Run-Id"]
    # Read to its end: a watcher opened while the first run is live would (rightly) stream that run first.
    assert read_events(started)[-1]["type"] == "RUN_FINISHED"
    watcher = Watcher(b, thread_id)
    watcher.until(named("tambo.thread.updated"))

    own = run_on(a, thread_id, LONG, first_run)
    frames = [frame for frame in watcher.until(finished) if frame[0] is not None]
    run_id = own[0]["runId"]
    assert [event for _, event in frames] == own
    assert [seq for seq, _ in frames] == [f"{run_id}:{n}" for n in range(1, len(own) + 1)]

    # Renamed through A: B's stream hears it.
    assert a.patch(f"/v1/threads/{thread_id}", {"name": "From A"}).status_code == 200
    (_, renamed), = watcher.until(named("tambo.thread.updated"))
    assert renamed["value"]["name"] == "From A"
    watcher.close()

    # Resumed on B from the middle of the run: the rest, no snapshot.
    again = Watcher(b, thread_id, last_event_id=frames[3][0])
    resumed = again.until(finished)
    assert resumed[0][1]["name"] == "tambo.thread.updated" and resumed[1:] == frames[4:]
    # A run started on A while B's resumed stream is open streams there too.
    more = run_on(a, thread_id, "And then?", run_id)
    assert [event for seq, event in again.until(finished) if seq is not None] == more
    again.close()


def test_open_thread_streams_hold_no_database_connection(apis, cluster):
    pg, _ = cluster
    a, b = apis
    started = a.post("/v1/threads/runs", body("hello"), stream=True)
    thread_id = started.headers["X-Thread-Id"]
    started.close()
    watchers = [Watcher(api, thread_id) for api in [a, b] * 10]
    for watcher in watchers:
        watcher.until(named("tambo.thread.updated"))
    with psycopg.connect(pg.url, autocommit=True) as conn:
        # Each process: its bounded pool (DB_POOL_SIZE 4), its LISTEN, event log and lease renewal
        # connections at most (docs/deployment.md#scaling-processes-machines-pgbouncer).
        count = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                             "AND pid <> pg_backend_pid() AND backend_type = 'client backend'").fetchone()[0]
    assert count <= 2 * (4 + 3), count
    for watcher in watchers:
        watcher.close()
