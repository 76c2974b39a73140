"""Resumable runs across processes (docs/protocol.md#resumable-runs): two uvicorn processes on one PostgreSQL.

A throwaway cluster logging every statement (tests/support/pg_cluster.py), so that the event log's
statements can be counted: they must not grow with the number of events or readers.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Iterator

import psycopg
import pytest
import requests

from tests.conftest import Api, require_part
from tests.runs.test_resume_limits import BIG, BUFFER_BYTES, _frames, _read_all, stalled_request
from tests.support.live import LiveServer
from tests.support.pg_cluster import PgCluster, migrated_cluster, pg_bin
from tests.support.sse import iter_frames, read_frames

LONG = "Tell me everything about it. " * 25  # ~65 deltas, 10 ms apart


@pytest.fixture(scope="module")
def cluster():
    require_part(pg_bin() is not None, "PostgreSQL 15 server binaries (apt-get install postgresql-15)")
    with migrated_cluster(options="-c log_statement=all -c log_min_messages=log") as found:
        yield found


@pytest.fixture(scope="module")
def servers(cluster):
    pg, _ = cluster
    # They take no run over: a run of another test's process that dies here is that test's to follow.
    env = {"DATABASE_URL": pg.url, "OFFLINE_MODEL_DELAY": "0.01", "DB_POOL_SIZE": "4", "RUN_TAKEOVERS_PER_PROCESS": "0"}
    a, b = LiveServer("resume-a", env), LiveServer("resume-b", env)
    yield a, b
    a.stop()
    b.stop()


@pytest.fixture
def apis(cluster, servers) -> tuple[Api, Api]:
    _, key = cluster
    a, b = servers
    return Api(a.url, key), Api(b.url, key)


def body(text: str, **extra) -> dict:
    return {"userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": text}]}, **extra}


def events(api: Api, thread_id: str, run_id: str, after: int | None = None) -> requests.Response:
    headers = {"Last-Event-ID": str(after)} if after is not None else {}
    response = api.session.get(f"{api.base_url}/v1/threads/{thread_id}/runs/{run_id}/events",
                               params={"userKey": "alice"}, headers=headers, stream=True, timeout=60)
    assert response.status_code == 200, response.text
    return response


def start(api: Api, text: str, **extra) -> tuple[requests.Response, str, str]:
    """A run on a new thread that goes on when its client leaves: (its stream, thread id, run id)."""
    started = api.post("/v1/threads/runs", body(text, onDisconnect="continue", **extra), stream=True)
    assert started.status_code == 200, started.text
    return started, started.headers["X-Thread-Id"], started.headers["X-Run-Id"]


@contextmanager
def two_servers(name: str, key: str, env: dict[str, str]) -> Iterator[tuple[LiveServer, LiveServer, Api, Api]]:
    """Processes A and B of their own on one database, and a client of each."""
    a = LiveServer(f"{name}-a", env)
    try:
        b = LiveServer(f"{name}-b", env)
        try:
            yield a, b, Api(a.url, key), Api(b.url, key)
        finally:
            b.stop()
    finally:
        a.stop()


def test_a_run_left_on_one_process_is_rejoined_through_the_other_without_gap_or_duplicate(apis):
    a, b = apis
    started, thread_id, run_id = start(a, LONG)
    stayed = events(a, thread_id, run_id)  # a reader that stays connected to the end
    own = iter_frames(started)
    got = [next(own) for _ in range(4)]
    started.close()  # the client goes away mid-run

    rest = read_frames(events(b, thread_id, run_id, after=got[-1][0]))

    assert got + rest == read_frames(stayed)
    assert [seq for seq, _ in got + rest] == list(range(1, len(got) + len(rest) + 1))
    assert rest[-1][1]["type"] == "RUN_FINISHED"
    thread = b.get(f"/v1/threads/{thread_id}").json()
    assert thread["runStatus"] == "idle" and thread["lastCompletedRunId"] == run_id
    assert not thread.get("lastRunCancelled")
    # Replayed after the end, from either process, the run is the same.
    assert read_frames(events(b, thread_id, run_id)) == got + rest
    assert read_frames(events(a, thread_id, run_id, after=2)) == (got + rest)[2:]


def test_fifty_readers_on_two_processes_receive_identical_events(apis):
    a, b = apis
    started, thread_id, run_id = start(a, LONG)
    with ThreadPoolExecutor(50) as pool:
        readers = [pool.submit(lambda api=api: read_frames(events(api, thread_id, run_id)))
                   for api in [a, b] * 25]
        own = read_frames(started)
        results = [reader.result() for reader in readers]
    assert own[-1][1]["type"] == "RUN_FINISHED"
    for result in results:
        assert result == own


def test_a_future_last_event_id_is_refused_on_the_other_process_once_the_run_ended(apis):
    a, b = apis
    started = a.post("/v1/threads/runs", body("hello"), stream=True)
    frames = read_frames(started)
    thread_id, run_id = started.headers["X-Thread-Id"], started.headers["X-Run-Id"]
    # Read through B to the end: the run's last event is in the log now, so B knows its id.
    assert read_frames(events(b, thread_id, run_id)) == frames
    response = b.session.get(f"{b.base_url}/v1/threads/{thread_id}/runs/{run_id}/events",
                             params={"userKey": "alice"}, headers={"Last-Event-ID": str(frames[-1][0] + 1)},
                             timeout=30)
    assert response.status_code == 400 and response.json()["lastEventId"] == frames[-1][0]


def _event_log_statements(pg: PgCluster, offset: int) -> dict[str, int]:
    """The statements on the event log in the server log after `offset`, by kind."""
    counts = {"write": 0, "poll": 0, "read": 0, "cleanup": 0}
    for sql in pg.statements(offset):
        if "runs_runevent" not in sql:
            continue
        if "INSERT INTO runs_runevent" in sql:
            counts["write"] += 1
        elif "DELETE FROM" in sql:
            counts["cleanup"] += 1
        elif "unnest(" in sql:
            counts["poll"] += 1
        else:
            counts["read"] += 1
    return counts


def test_event_log_statements_do_not_grow_with_events_or_readers(cluster, apis):
    pg, _ = cluster
    a, b = apis
    runs, readers_per_run = 8, 3
    offset = pg.log_size()

    def one_run() -> tuple[list, list[list]]:
        session = requests.Session()
        session.headers["x-api-key"] = a.session.headers["x-api-key"]
        started = session.post(a.base_url + "/v1/threads/runs", json=body("Count with me. " * 200,
                                                                         onDisconnect="continue"),
                               stream=True, timeout=60)
        thread_id, run_id = started.headers["X-Thread-Id"], started.headers["X-Run-Id"]
        with ThreadPoolExecutor(readers_per_run) as pool:
            readers = [pool.submit(lambda: read_frames(events(b, thread_id, run_id))) for _ in range(readers_per_run)]
            return read_frames(started), [r.result() for r in readers]

    with ThreadPoolExecutor(runs) as pool:
        results = [f.result() for f in [pool.submit(one_run) for _ in range(runs)]]
    for own, read in results:
        assert own[-1][1]["type"] == "RUN_FINISHED"
        assert all(r == own for r in read)
    counts = _event_log_statements(pg, offset)
    produced = sum(len(own) for own, _ in results)
    delivered = produced * (1 + readers_per_run)
    print("event log statements", counts, "events", produced, "delivered", delivered)
    # Thousands of events from concurrent runs: the process writes them all in one statement per
    # flush (not per event, nor per run), the other process reads them in one poll per wake-up (not
    # per reader), and each reader reads the log once, to join (the run's last logged id: its
    # backlog comes with the shared poll).
    assert counts["write"] < produced / 5, counts
    assert counts["poll"] <= counts["write"] + 40, counts
    assert counts["read"] <= runs * readers_per_run, counts
    assert sum(counts.values()) < delivered / 10, (counts, delivered)


def test_a_reader_of_a_run_whose_process_died_ends_with_the_runs_error(cluster):
    pg, key = cluster
    # A run that cannot be taken over (docs/operations.md#takeover): tests/runs/test_takeover.py has the others.
    with two_servers("resume-doomed", key, {"DATABASE_URL": pg.url, "DB_POOL_SIZE": "4", "RUN_LEASE_SECONDS": "1",
                                            "RUN_TAKEOVER_LIMIT": "0"}) as (doomed, _, a, b):
        _, thread_id, run_id = start(a, "!slow")
        reader = iter_frames(events(b, thread_id, run_id))
        first = [next(reader), next(reader)]
        doomed.process.kill()  # the process running the run dies mid-run

        # B records the expired lease and logs how the run ended: its reader gets that.
        rest = list(reader)
        got = first + rest
        assert [seq for seq, _ in got] == list(range(1, len(got) + 1))
        assert [e["type"] for _, e in got].count("RUN_ERROR") == 1
        end = got[-1][1]
        assert (end["type"], end["code"], end["isRetryable"]) == ("RUN_ERROR", "RUN_LEASE_EXPIRED", True)
        thread = b.get(f"/v1/threads/{thread_id}").json()
        assert thread["lastRunError"]["code"] == "RUN_LEASE_EXPIRED"
        # A replay gives the same events and ends too.
        assert read_frames(events(b, thread_id, run_id)) == got
        # A client of the dead process may hold ids it never logged: it gets how the run ended.
        assert read_frames(events(b, thread_id, run_id, after=got[-1][0] + 3)) == [got[-1]]


def test_an_id_the_other_process_sent_but_has_not_logged_yet_is_accepted(cluster, servers):
    pg, key = cluster
    # A writes its event log every 0.5 s, so its own stream runs ahead of the log.
    slow = LiveServer("resume-slow-flush", {"DATABASE_URL": pg.url, "DB_POOL_SIZE": "4",
                                            "OFFLINE_MODEL_DELAY": "0.01", "RUN_EVENTS_FLUSH_INTERVAL": "0.5"})
    try:
        a, b = Api(slow.url, key), Api(servers[1].url, key)
        started, thread_id, run_id = start(a, LONG)
        own = iter_frames(started)
        while True:  # read until the stream holds an id the log does not
            seq, _ = next(own)
            if seq > _logged_upto(pg, run_id):
                break
        started.close()

        rest = read_frames(events(b, thread_id, run_id, after=seq))

        assert rest[0][0] == seq + 1 and rest[-1][1]["type"] == "RUN_FINISHED"
        assert [s for s, _ in rest] == list(range(seq + 1, rest[-1][0] + 1))

        # An id the run never reaches is refused once the log has not reached it within the grace.
        again = a.post(f"/v1/threads/{thread_id}/runs",
                       body("!slow", onDisconnect="continue", previousRunId=run_id), stream=True)
        assert again.status_code == 200, again.text
        run_id = again.headers["X-Run-Id"]
        next(iter_frames(again))
        response = b.session.get(f"{b.base_url}/v1/threads/{thread_id}/runs/{run_id}/events",
                                 params={"userKey": "alice"}, headers={"Last-Event-ID": "100000"}, timeout=30)
        assert response.status_code == 400, response.text
        assert response.json()["lastEventId"] < 100000
        again.close()
    finally:
        slow.stop()


def _logged_upto(pg: PgCluster, run_id: str) -> int:
    with psycopg.connect(pg.url, autocommit=True) as conn:
        return conn.execute("SELECT coalesce(max(seq), 0) FROM runs_runevent WHERE run_id = %s",
                            [run_id]).fetchone()[0]


def test_a_reader_on_the_other_process_loses_nothing_when_the_database_restarts_mid_run():
    # The process running the run keeps its events in memory while it cannot write them; the other
    # process's LISTEN and poll connections are cut and come back. Its own cluster: it is stopped.
    with migrated_cluster() as (pg, key), two_servers("resume-outage", key, {
            "DATABASE_URL": pg.url, "DB_POOL_SIZE": "4", "OFFLINE_MODEL_DELAY": "0.1",
            "RUN_WATCH_INTERVAL": "0.2"}) as (a_server, b_server, a, b):
        started, thread_id, run_id = start(a, LONG)
        reader = iter_frames(events(b, thread_id, run_id))
        own = iter_frames(started)
        got, mine = [next(reader) for _ in range(3)], [next(own) for _ in range(3)]

        pg.halt()
        mine += [next(own) for _ in range(5)]  # the run streams on while the database is away
        pg.resume()

        mine += list(own)
        got += list(reader)
        # The outage was real on both sides: A could not write its log, B lost its LISTEN.
        assert "writing the event log failed" in a_server.log_text()
        assert "the LISTEN connection failed" in b_server.log_text()
    assert got == mine
    assert [seq for seq, _ in got] == list(range(1, len(got) + 1))
    assert got[-1][1]["type"] == "RUN_FINISHED"


def test_a_stalled_reader_on_the_other_process_is_cut_and_resumes(cluster):
    # The other process's copy of the run keeps no more than its buffer either: a reader there that
    # reads nothing while megabytes stream is cut with tambo.stream.lagged, then resumes from the log.
    pg, key = cluster
    with two_servers("resume-big", key, {
            "DATABASE_URL": pg.url, "DB_POOL_SIZE": "4", "OFFLINE_MODEL_DELAY": "0",
            "RUN_EVENTS_BUFFER_BYTES": str(BUFFER_BYTES), "MAX_REQUEST_BYTES": str(len(BIG) + 100_000),
            "DEFAULT_MAX_INPUT_TOKENS": "10000000"}) as (  # megabytes of text: past the safe default budget
            _, b_server, a, b):
        started, thread_id, run_id = start(a, BIG)
        stalled = stalled_request(b_server.url, key, "GET",
                                  f"/v1/threads/{thread_id}/runs/{run_id}/events?userKey=alice")
        started.close()  # the run goes on without its own stream
        deadline = time.monotonic() + 120
        while not _finished(pg, run_id):
            assert time.monotonic() < deadline, "the run never ended"
            time.sleep(0.2)
        _, got = _frames(_read_all(stalled))

        lagged = got[-1]
        assert lagged[0] is None and lagged[1]["name"] == "tambo.stream.lagged"
        last = lagged[1]["value"]["lastEventId"]
        kept = got[:-1]
        assert [seq for seq, _ in kept] == list(range(1, last + 1))
        rest = read_frames(events(b, thread_id, run_id, after=last))
        assert kept + rest == read_frames(events(b, thread_id, run_id))
        assert rest[-1][1]["type"] == "RUN_FINISHED"


def _finished(pg: PgCluster, run_id: str) -> bool:
    with psycopg.connect(pg.url, autocommit=True) as conn:
        return conn.execute("SELECT finished_at IS NOT NULL FROM runs_run WHERE id = %s", [run_id]).fetchone()[0]


def test_a_reader_joining_behind_more_than_the_other_process_keeps_is_not_cut(cluster):
    # With a 20 KB buffer per run, a reader that joins a live run through B from the start, when
    # ~40 KB are logged, reads them from the log (its copy of the run would have to drop them).
    pg, key = cluster
    with two_servers("resume-behind", key, {
            "DATABASE_URL": pg.url, "DB_POOL_SIZE": "4", "OFFLINE_MODEL_DELAY": "0.01",
            "RUN_EVENTS_BUFFER_BYTES": str(BUFFER_BYTES)}) as (_, _, a, b):
        started, thread_id, run_id = start(a, LONG * 8)
        own = iter_frames(started)
        mine = [next(own) for _ in range(300)]
        while _logged_upto(pg, run_id) < 300:
            time.sleep(0.01)

        got = read_frames(events(b, thread_id, run_id))

        mine += list(own)
    assert got == mine
    assert got[-1][1]["type"] == "RUN_FINISHED"
