"""What the outage tests share (tests/runs/test_outage.py, test_outage_at_once.py): a server on a
PostgreSQL cluster of the test's own, which the test stops and starts, and the wait for a thread
to be free again once the database is back."""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

from tests.runs.conftest import Runs
from tests.support.live import LiveServer
from tests.support.pg_cluster import migrated_cluster

# The echo of this text streams for a few seconds (0.1 s between deltas of 12 characters).
LONG_TEXT = "Tell me about the database outage that is about to happen while you answer. " * 4


@contextmanager
def outage_server(name: str, env: dict[str, str]) -> Iterator[tuple[object, LiveServer]]:
    """A migrated cluster (its project key as `cluster.api_key`) and a server on it, with the slow
    offline model so a run is still streaming when the database stops."""
    with migrated_cluster() as (cluster, key):
        cluster.api_key = key
        server = LiveServer(name, {"DATABASE_URL": cluster.url, "OFFLINE_MODEL_DELAY": "0.1", **env})
        try:
            yield cluster, server
        finally:
            server.stop()


def wait_until_back(runs: Runs, thread_id: str, timeout: float) -> dict:
    """Polls the thread until it answers and is idle; fails past `timeout` s after the database is back."""
    deadline = time.monotonic() + timeout
    while True:
        response = runs.api.get(f"/v1/threads/{thread_id}")
        assert response.status_code in (200, 503), (response.status_code, response.text)
        if response.status_code == 200 and response.json()["runStatus"] == "idle":
            return response.json()
        assert time.monotonic() < deadline, f"not free {timeout} s after the database came back: {response.text}"
        time.sleep(0.1)
