"""An outage answered at once (core/db_health.py): once the database is known to be down, requests
get their 503 without waiting for a pooled connection, and a run whose store fails tells its client
at once; what is stored when the database returns matches what the client was told.

The server's pool would wait DB_POOL_TIMEOUT=60 s for a connection: a request or a run that waited
for the pool would not be answered within the client's timeout (20 s), nor without keep-alive
comments (HEARTBEAT_SECONDS=3) in between. PostgreSQL only: stopping the database is the test.
"""
from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from tests.conftest import Api
from tests.runs.conftest import Runs, text_of
from tests.support.outage import LONG_TEXT, outage_server, wait_until_back
from tests.support.run_requests import user_message

CLIENT_TIMEOUT = 20


@pytest.fixture(scope="module")
def outage():
    with outage_server("outage-at-once", {"DB_POOL_TIMEOUT": "60", "HEARTBEAT_SECONDS": "3",
                                          "RUN_LEASE_SECONDS": "60"}) as started:
        yield started


@pytest.fixture
def runs(outage) -> Runs:
    cluster, server = outage
    return Runs(Api(server.url, cluster.api_key))


def test_twenty_run_requests_during_an_outage_are_all_answered_503_at_once(outage, runs: Runs):
    cluster, server = outage
    thread_id, events = runs.run_new("hello")
    run_id = events[0]["runId"]

    def one(i: int) -> tuple[requests.Response, float]:
        started = time.monotonic()
        response = requests.post(f"{server.url}/v1/threads/{thread_id}/runs", timeout=CLIENT_TIMEOUT,
                                 headers={"x-api-key": cluster.api_key},
                                 json={"userKey": runs.api.user_key, "message": user_message(f"again {i}"),
                                       "previousRunId": run_id})
        return response, time.monotonic() - started

    cluster.halt()
    try:
        with ThreadPoolExecutor(20) as pool:
            answers = list(pool.map(one, range(20)))
        gateway = requests.post(f"{server.url}/api/chat/completions", timeout=CLIENT_TIMEOUT,
                                headers={"Authorization": f"Bearer {cluster.api_key}"},
                                json={"model": "offline", "messages": [{"role": "user", "content": "hi"}]})
    finally:
        cluster.resume()
    # The gateway's callers are OpenAI clients: OpenAI's error shape, a server error, when to retry.
    assert gateway.status_code == 503, gateway.text
    assert gateway.json()["error"]["type"] == "server_error" and int(gateway.headers["Retry-After"]) > 0
    for response, _ in answers:
        assert response.status_code == 503, (response.status_code, response.text)
        assert response.headers["Content-Type"].startswith("application/problem+json")
        assert response.json()["code"] == "SERVICE_UNAVAILABLE"
        assert int(response.headers["Retry-After"]) > 0
    seconds = sorted(elapsed for _, elapsed in answers)
    print(f"503 after {seconds[0]:.2f} .. {seconds[-1]:.2f} s (median {seconds[10]:.2f})")
    wait_until_back(runs, thread_id, timeout=15.0)
    assert text_of(runs.run(thread_id, "again", previousRunId=run_id))


def test_a_run_whose_store_fails_tells_its_client_at_once_and_is_stored_as_failed(outage, runs: Runs):
    cluster, _ = outage
    response = runs.post_new(LONG_TEXT)
    assert response.status_code == 200
    thread_id = response.headers["X-Thread-Id"]
    frames: list[bytes] = []
    buffer = b""
    chunks = response.iter_content(chunk_size=None)
    halted = False
    try:
        for chunk in chunks:
            buffer += chunk
            while b"\n\n" in buffer:
                frame, buffer = buffer.split(b"\n\n", 1)
                frames.append(frame)
                if not halted and b'"TEXT_MESSAGE_CONTENT"' in frame:
                    cluster.halt()
                    halted = True
        # Down a while longer than it took to tell the client: the run's end is recorded on return.
        time.sleep(2)
    finally:
        cluster.resume()
    comments = [i for i, f in enumerate(frames) if f.startswith(b":")]
    last_delta = max(i for i, f in enumerate(frames) if b'"TEXT_MESSAGE_CONTENT"' in f)
    assert b'"RUN_ERROR"' in frames[-1] and b'"SERVICE_UNAVAILABLE"' in frames[-1], frames[-1]
    # No keep-alive (one every 3 s) between the last delta and the RUN_ERROR: nothing waited for the pool.
    assert not [i for i in comments if i > last_delta], frames[last_delta:]

    thread = wait_until_back(runs, thread_id, timeout=15.0)
    assert thread["lastRunError"]["code"] == "SERVICE_UNAVAILABLE" and "currentRunId" not in thread
    (answer,) = [m for m in thread["messages"] if m["role"] == "assistant"]
    seen = "".join(json.loads(f.split(b"data: ", 1)[1])["delta"]
                   for f in frames if b'"TEXT_MESSAGE_CONTENT"' in f)
    assert answer["content"][0]["text"] == seen
