"""Background runs (docs/protocol.md#background-runs): a start that answers at once with the run's id,
the run going on with no reader, its status at `GET …/runs/{runId}`, joining it later through
`/events` and the Python client's `join`, cancelling it; and the project's `runsOutliveDisconnect`.

One process, so these run on SQLite too (the feed and the event log serve the readers).
"""
from __future__ import annotations

import time

import pytest

from clientsdk import Client
from projects.config import ProjectSettings, project_settings_save
from tests.support.sse import iter_frames, read_frames

pytestmark = pytest.mark.both_dbs

LONG = "Tell me everything. " * 20


def background(runs, text: str, *, thread_id: str | None = None, headers: dict | None = None, **extra):
    path = "/v1/threads/runs" if thread_id is None else f"/v1/threads/{thread_id}/runs"
    body = runs.body(text, **extra)
    return runs.api.session.post(runs.api.base_url + path, json=body, headers=headers or {}, timeout=30)


def wait_run(api, thread_id: str, run_id: str, *, not_status: str = "streaming", timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        run = api.get(f"/v1/threads/{thread_id}/runs/{run_id}").json()
        if run["status"] != not_status:
            return run
        assert time.monotonic() < deadline, run
        time.sleep(0.05)


def events(api, thread_id: str, run_id: str, last_event_id: str | None = None):
    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    response = api.session.get(f"{api.base_url}/v1/threads/{thread_id}/runs/{run_id}/events",
                               params={"userKey": api.user_key}, headers=headers, stream=True, timeout=30)
    assert response.status_code == 200, response.text
    return response


def stored_answer(api, thread_id: str) -> str:
    last = api.thread(thread_id)["messages"][-1]
    assert last["role"] == "assistant" and not last.get("isCancelled")
    return "".join(b["text"] for b in last["content"] if b["type"] == "text")


def test_a_background_start_answers_202_with_the_run_and_the_run_completes_with_no_reader(runs, api):
    response = background(runs, LONG, background=True)
    assert response.status_code == 202, response.text
    started = response.json()
    assert response.headers["Content-Type"].startswith("application/json")
    assert set(started) >= {"id", "threadId", "status", "eventsUrl", "createdAt"}
    assert started["status"] == "streaming"
    thread_id, run_id = started["threadId"], started["id"]
    assert response.headers["X-Thread-Id"] == thread_id and response.headers["X-Run-Id"] == run_id
    assert response.headers["Location"] == f"/v1/threads/{thread_id}/runs/{run_id}"
    assert started["eventsUrl"] == f"/v1/threads/{thread_id}/runs/{run_id}/events"
    # The connection is closed: nobody reads the run, and it still ends, stored.
    response.close()
    run = wait_run(api, thread_id, run_id)
    assert run["status"] == "completed" and run["finishedAt"]
    assert runs.wait_idle(thread_id)["lastCompletedRunId"] == run_id
    assert "Tell me everything" in stored_answer(api, thread_id)


def test_prefer_respond_async_starts_a_background_run_on_an_existing_thread(runs, api):
    thread_id, first = runs.run_new("hello")
    response = background(runs, "again", thread_id=thread_id, headers={"Prefer": "respond-async, wait=5"},
                          previousRunId=first[0]["runId"])
    assert response.status_code == 202, response.text
    run_id = response.json()["id"]
    assert "X-Thread-Id" not in response.headers  # known already, as for a streamed start
    assert wait_run(api, thread_id, run_id)["status"] == "completed"


def test_a_background_run_is_joined_later_through_its_events_from_the_first_to_the_last(runs, api):
    started = background(runs, LONG, background=True).json()
    thread_id, run_id = started["threadId"], started["id"]
    frames = read_frames(events(api, thread_id, run_id))
    assert [seq for seq, _ in frames] == list(range(1, len(frames) + 1))
    assert frames[0][1] == {**frames[0][1], "type": "RUN_STARTED", "runId": run_id}
    assert frames[-1][1]["type"] == "RUN_FINISHED"
    text = "".join(e["delta"] for _, e in frames if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == stored_answer(api, thread_id)
    # Joined again after its end, from an id: the rest, the same events.
    assert read_frames(events(api, thread_id, run_id, last_event_id="2")) == frames[2:]


def test_the_python_client_starts_a_background_run_joins_it_and_reads_its_status(api, live_server_url, api_key):
    with Client(live_server_url, api_key, api.user_key, timeout=30) as client:
        started = client.runs.start_background(LONG)
        assert started.status == "streaming"
        stream = client.join(started.thread_id, started.id)
        seen = [event.type for event, _ in stream]
        snapshot = stream.snapshot
        assert seen[0] == "RUN_STARTED" and seen[-1] == "RUN_FINISHED"
        assert snapshot.messages[-1].text == stored_answer(api, started.thread_id)
        assert client.runs.retrieve(started.thread_id, started.id).status == "completed"


def test_cancelling_a_background_run_stops_it_and_stores_the_partial_answer(runs, api):
    started = background(runs, "!slow", background=True).json()
    thread_id, run_id = started["threadId"], started["id"]
    reader = iter_frames(events(api, thread_id, run_id))
    assert next(reader)[1]["type"] == "RUN_STARTED"
    cancelled = api.delete(f"/v1/threads/{thread_id}/runs/{run_id}")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json() == {"runId": run_id, "status": "cancelled"}
    rest = [event for _, event in reader]
    assert rest[-1]["type"] == "RUN_ERROR" and rest[-1]["code"] == "CANCELLED"
    run = api.get(f"/v1/threads/{thread_id}/runs/{run_id}").json()
    assert run["status"] == "cancelled" and run["error"]["code"] == "CANCELLED"
    assert api.thread(thread_id)["messages"][-1]["isCancelled"] is True


def test_the_run_status_is_for_the_threads_user_only(runs, api):
    started = background(runs, "hello", background=True).json()
    path = f"/v1/threads/{started['threadId']}/runs/{started['id']}"
    assert api.get(path, userKey="mallory").status_code == 404
    assert api.get(path, userKey="mallory").json()["code"] == "RUN_NOT_FOUND"
    assert api.get(f"/v1/threads/{started['threadId']}/runs/run_unknown").status_code == 404
    assert wait_run(api, started["threadId"], started["id"])["status"] == "completed"


def test_background_must_be_a_boolean(runs):
    response = background(runs, "hello", background="yes")
    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"


def test_a_streamed_run_is_cancelled_when_its_client_leaves_unless_the_project_says_runs_outlive_it(
        runs, api, project):
    response = runs.post_new("!slow")
    thread_id = response.headers["X-Thread-Id"]
    own = iter_frames(response)
    next(own), next(own)
    response.close()
    assert runs.wait_idle(thread_id)["lastRunCancelled"] is True

    project_settings_save(project, ProjectSettings(runs_outlive_disconnect=True))
    response = runs.post_new(LONG)
    thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
    own = iter_frames(response)
    next(own), next(own)
    response.close()
    assert wait_run(api, thread_id, run_id)["status"] == "completed"
    assert not runs.wait_idle(thread_id).get("lastRunCancelled")
    # A request that says `onDisconnect: "cancel"` is still cancelled under that project.
    response = runs.post_new("!slow", onDisconnect="cancel")
    thread_id = response.headers["X-Thread-Id"]
    own = iter_frames(response)
    next(own), next(own)
    response.close()
    assert runs.wait_idle(thread_id)["lastRunCancelled"] is True
