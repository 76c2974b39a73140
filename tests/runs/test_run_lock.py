"""The run lock over HTTP (docs/protocol.md#the-run-lock): one run per thread, and a dead holder's lease is taken over."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import requests
from django.utils import timezone

from runs.lock import LEASE_EXPIRED_CODE, lock_held
from runs.models import Run
from tests.runs.conftest import Runs, paused_thread, text_message, tool_result
from tests.support.sse import read_events, types
from threads.models import Thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]

ATTEMPTS = 10


def post_at_once(api, path: str, bodies: list[dict]) -> list[requests.Response]:
    """POSTs all bodies at the same moment, each from its own connection; answers in the same order."""
    barrier = threading.Barrier(len(bodies))

    def post(body: dict) -> requests.Response:
        session = requests.Session()
        session.headers["x-api-key"] = api.session.headers["x-api-key"]
        barrier.wait(timeout=30)
        return session.post(api.base_url + path, json=body, stream=True, timeout=30)

    with ThreadPoolExecutor(len(bodies)) as pool:
        return list(pool.map(post, bodies))


def test_of_many_simultaneous_runs_on_a_thread_exactly_one_streams(runs: Runs, api):
    thread_id = api.post("/v1/threads", {"userKey": "alice"}).json()["id"]
    answers = post_at_once(api, f"/v1/threads/{thread_id}/runs", [runs.body("!slow please")] * ATTEMPTS)
    winners = [a for a in answers if a.status_code == 200]
    try:
        assert sorted(a.status_code for a in answers) == [200] + [409] * (ATTEMPTS - 1), [a.text for a in answers]
        (winner,) = winners
        run_id = winner.headers["X-Run-Id"]
        for refused in answers:
            if refused is not winner:
                assert refused.json()["code"] == "CONCURRENT_RUN"
                assert refused.json()["currentRunId"] == run_id
        assert runs.thread(thread_id)["currentRunId"] == run_id
    finally:
        for winner in winners:
            api.delete(f"/v1/threads/{thread_id}/runs/{winner.headers['X-Run-Id']}")
            winner.close()
    thread = runs.wait_idle(thread_id)
    # Only the winner left anything: one user message and its cancelled answer.
    assert [m["role"] for m in thread["messages"]] == ["user", "assistant"]
    assert Run.objects.filter(thread_id=thread_id).count() == 1


def test_simultaneous_runs_on_new_threads_all_stream(runs: Runs, api):
    answers = post_at_once(api, "/v1/threads/runs", [runs.body(f"hello {n}") for n in range(ATTEMPTS)])
    assert [a.status_code for a in answers] == [200] * ATTEMPTS, [a.text for a in answers]
    assert len({a.headers["X-Thread-Id"] for a in answers}) == ATTEMPTS
    for n, answer in enumerate(answers):
        events = read_events(answer)
        assert types(events)[-1] == "RUN_FINISHED"
        assert f"You said: hello {n}" in "".join(e.get("delta", "") for e in events)


def held_lock(thread_id: str, *, lease_left: timedelta) -> Run:
    """A run that took the lock in some other process, with `lease_left` until its lease expires."""
    thread = Thread.objects.get(pk=thread_id)
    run = Run.objects.create(thread=thread)
    with lock_held(thread_id=thread_id, run_id=run.id):
        pass
    Thread.objects.filter(pk=thread_id).update(lease_expires_at=timezone.now() + lease_left)
    return run


def test_a_live_lease_refuses_a_new_run(runs: Runs, api):
    thread_id = api.post("/v1/threads", {"userKey": "alice"}).json()["id"]
    holder = held_lock(thread_id, lease_left=timedelta(minutes=5))
    response = runs.post(thread_id, "hello")
    assert response.status_code == 409, response.text
    assert response.json()["currentRunId"] == holder.id
    thread = runs.thread(thread_id)
    assert thread["runStatus"] == "waiting" and thread["currentRunId"] == holder.id
    holder.refresh_from_db()
    assert holder.status == Run.Status.WAITING


def test_a_run_takes_over_an_expired_lease_and_the_dead_run_is_failed(runs: Runs, api):
    thread_id = api.post("/v1/threads", {"userKey": "alice"}).json()["id"]
    dead = held_lock(thread_id, lease_left=timedelta(seconds=-1))

    response = runs.post(thread_id, "hello")
    assert response.status_code == 200, response.text
    events = read_events(response)
    assert types(events)[-1] == "RUN_FINISHED"

    dead.refresh_from_db()
    assert dead.status == Run.Status.FAILED and dead.error_code == LEASE_EXPIRED_CODE
    assert dead.finished_at is not None
    thread = runs.thread(thread_id)
    assert thread["runStatus"] == "idle" and "currentRunId" not in thread
    assert thread["lastCompletedRunId"] == response.headers["X-Run-Id"]


def test_a_takeover_still_follows_the_last_completed_run(runs: Runs):
    # The dead run never completed, so the next run names the last one that did.
    thread_id, events = runs.run_new(text_message("hello"))
    first_run = events[0]["runId"]
    dead = held_lock(thread_id, lease_left=timedelta(seconds=-1))
    after = runs.run(thread_id, "again", previousRunId=first_run)
    assert types(after)[-1] == "RUN_FINISHED"
    dead.refresh_from_db()
    assert dead.status == Run.Status.FAILED


def test_of_simultaneous_continuations_exactly_one_answers_the_calls(runs: Runs, api):
    thread_id, run_id, (call_id,) = paused_thread(runs)
    body = runs.body({"role": "user", "content": [tool_result(call_id, "sunny")]}, previousRunId=run_id)
    answers = post_at_once(api, f"/v1/threads/{thread_id}/runs", [body] * ATTEMPTS)
    winners = [a for a in answers if a.status_code == 200]
    assert len(winners) == 1, [a.text for a in answers]
    for refused in answers:
        if refused is not winners[0]:
            # Refused by whichever check saw the winner first: the lock, or the calls already answered.
            assert refused.json()["code"] in ("CONCURRENT_RUN", "INVALID_TOOL_RESULT", "INVALID_PREVIOUS_RUN")
    events = read_events(winners[0])
    assert "Tool get_weather returned: sunny" in "".join(e.get("delta", "") for e in events)
    thread = runs.wait_idle(thread_id)
    results = [b for m in thread["messages"] for b in m["content"] if b["type"] == "tool_result"]
    assert results == [tool_result(call_id, "sunny")]
