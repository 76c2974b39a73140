"""The pool's check of a connection it hands out (core/pool_check.py): no round trip for a connection
in use, and still none of a database restart's dead connections handed to a request.

A real server on a PostgreSQL cluster of the test's own, logging every query it is sent
(log_statement=all): the pool's check is an empty query there. PostgreSQL only: the pool is.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import Api
from tests.runs.conftest import Runs, text_of
from tests.support.live import LiveServer
from tests.support.pg_cluster import migrated_cluster


@pytest.fixture(scope="module")
def served():
    with migrated_cluster(options="-c log_statement=all -c log_min_messages=log") as (cluster, key):
        # No watcher tick while the database restarts (it would mark the database down: a 503 for
        # another reason): the request after it is the first to ask for a connection. No check for
        # idleness either: the restart's dead connections are to be found by what the server said.
        # DB_POOL_TIMEOUT 2.5 s: less than psycopg_pool's back-off after two failed checks (1 + 2 s),
        # more than a fresh connection takes on a loaded machine.
        server = LiveServer("pool-check", {"DATABASE_URL": cluster.url, "OFFLINE_MODEL_DELAY": "0",
                                           "RUN_WATCH_INTERVAL": "3600", "DB_POOL_CHECK_IDLE": "3600",
                                           "DB_POOL_TIMEOUT": "2.5"})
        try:
            yield cluster, Runs(Api(server.url, key))
        finally:
            server.stop()


def test_runs_cost_no_health_check_round_trip(served):
    cluster, runs = served
    runs.run_new("warm up")
    offset = cluster.log_size()
    for _ in range(3):  # runs on new threads and on existing ones
        thread_id, events = runs.run_new("hello")
        assert text_of(runs.run(thread_id, "again", previousRunId=events[0]["runId"]))
    queries = cluster.logged_sql(offset)
    assert len(cluster.statements(offset)) >= 6 * 5, queries  # the runs' statements were logged
    # Before: one empty query per connection handed out, each database call of each run.
    assert [sql for sql in queries if not sql.strip()] == []


def test_the_first_request_after_a_database_restart_gets_a_live_connection(served):
    """Every idle connection the restart cut is dropped before one is handed out. Before, each was
    handed to the check in turn, which failed and backed off 1, 2, 4 … s: with four, a PoolTimeout."""
    cluster, runs = served
    with ThreadPoolExecutor(4) as pool:  # four runs at once: four connections in the pool
        assert all(events[-1]["type"] == "RUN_FINISHED"
                   for _, events in pool.map(runs.run_new, ["before the restart"] * 4))
    cluster.halt()  # every pooled connection is cut
    cluster.resume()
    _, events = runs.run_new("after the restart")
    assert events[-1]["type"] == "RUN_FINISHED", events[-3:]
