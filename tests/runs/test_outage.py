"""The database going away and coming back (docs/protocol.md#design-for-scale and #after-a-crash), with a real PostgreSQL cluster of
the test's own stopped and started under a real server: never a 500, 503 with Retry-After while it is
down, the thread free within seconds of its return, and nothing the client saw lost.

PostgreSQL only: stopping the database is what is being tested.
"""
from __future__ import annotations

import pytest
import requests

from tests.conftest import Api
from tests.runs.conftest import Runs, text_of
from tests.support.outage import LONG_TEXT, outage_server, wait_until_back
from tests.support.sse import iter_events


@pytest.fixture(scope="module")
def outage():
    with outage_server("outage", {"RUN_LEASE_SECONDS": "30"}) as started:
        yield started


@pytest.fixture
def runs(outage) -> Runs:
    cluster, server = outage
    return Runs(Api(server.url, cluster.api_key))


def _assert_unavailable(response: requests.Response) -> None:
    assert response.status_code == 503, (response.status_code, response.text)
    assert response.headers["Content-Type"].startswith("application/problem+json")
    assert response.json()["code"] == "SERVICE_UNAVAILABLE"
    assert int(response.headers["Retry-After"]) > 0


def test_while_the_database_is_down_every_route_answers_503_with_retry_after(outage, runs: Runs):
    cluster, _ = outage
    thread_id, events = runs.run_new("hello")
    run_id = events[0]["runId"]
    cluster.halt()
    try:
        api = runs.api
        _assert_unavailable(api.get("/v1/threads"))
        _assert_unavailable(api.get(f"/v1/threads/{thread_id}"))
        _assert_unavailable(api.get(f"/v1/threads/{thread_id}/messages"))
        _assert_unavailable(api.post("/v1/threads", {"userKey": api.user_key}))
        _assert_unavailable(api.patch(f"/v1/threads/{thread_id}", {"name": "renamed"}))
        _assert_unavailable(api.delete(f"/v1/threads/{thread_id}/runs/{run_id}"))
        _assert_unavailable(runs.post(thread_id, "again", previousRunId=run_id))
        _assert_unavailable(runs.post_new("a new thread"))
    finally:
        cluster.resume()
    wait_until_back(runs, thread_id, timeout=5.0)
    assert text_of(runs.run(thread_id, "again", previousRunId=run_id))


def test_a_run_cut_off_by_an_outage_ends_with_run_error_keeps_its_text_and_frees_the_thread(outage, runs: Runs):
    cluster, _ = outage
    response = runs.post_new(LONG_TEXT)
    assert response.status_code == 200
    thread_id = response.headers["X-Thread-Id"]
    events = iter_events(response)
    seen = []
    while not any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in seen):
        seen.append(next(events))
    cluster.halt()
    try:
        seen.extend(events)  # the model goes on; storing its answer is what fails
        _assert_unavailable(runs.api.get(f"/v1/threads/{thread_id}"))
    finally:
        cluster.resume()

    assert [e["type"] for e in seen if e["type"] in ("RUN_FINISHED", "RUN_ERROR")] == ["RUN_ERROR"]
    assert seen[-1]["code"] == "SERVICE_UNAVAILABLE" and seen[-1]["isRetryable"] is True
    thread = wait_until_back(runs, thread_id, timeout=5.0)
    assert thread["lastRunError"]["code"] == "SERVICE_UNAVAILABLE" and "currentRunId" not in thread
    (answer,) = [m for m in thread["messages"] if m["role"] == "assistant"]
    assert answer["content"][0]["text"] == text_of(seen)
    # The thread works again, following the failed run.
    assert text_of(runs.run(thread_id, "hello again", previousRunId=thread["lastCompletedRunId"]))
