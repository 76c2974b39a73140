"""Resumable runs in one process (docs/protocol.md#resumable-runs): ids on every event, `onDisconnect: "continue"`,
and `GET …/runs/{runId}/events` replaying and following a run, with its 400 and 404 answers.

Single-process behaviour, so these run on SQLite too (the in-memory feed and the event log serve);
tests/runs/test_resume_pg.py covers readers on another process.
"""
from __future__ import annotations

import pytest

from tests.support.problems import assert_problem
from tests.support.sse import iter_frames, read_frames

pytestmark = pytest.mark.both_dbs

LONG = "Tell me everything. " * 40  # the offline model echoes it in ~70 deltas


def start(runs, text: str = "hello", **extra):
    response = runs.post_new(text, **extra)
    assert response.status_code == 200, response.text
    return response


def events_path(thread_id: str, run_id: str) -> str:
    return f"/v1/threads/{thread_id}/runs/{run_id}/events"


def get_events(api, thread_id: str, run_id: str, last_event_id: str | None = None, **params):
    headers = {"Last-Event-ID": last_event_id} if last_event_id is not None else {}
    params.setdefault("userKey", api.user_key)
    return api.session.get(api.base_url + events_path(thread_id, run_id), params=params, headers=headers,
                           stream=True, timeout=30)


def finished_run(runs, text: str = "hello", **extra) -> tuple[str, str, list]:
    response = start(runs, text, **extra)
    frames = read_frames(response)
    return response.headers["X-Thread-Id"], response.headers["X-Run-Id"], frames


def test_every_event_of_a_run_carries_the_next_id(runs):
    _, _, frames = finished_run(runs)
    assert [seq for seq, _ in frames] == list(range(1, len(frames) + 1))
    assert frames[0][1]["type"] == "RUN_STARTED" and frames[-1][1]["type"] == "RUN_FINISHED"


def test_it_replays_a_finished_run_with_the_same_ids_and_events(runs, api):
    thread_id, run_id, frames = finished_run(runs, LONG)
    replay = get_events(api, thread_id, run_id)
    assert replay.status_code == 200
    assert replay.headers["Content-Type"] == "text/event-stream"
    assert read_frames(replay) == frames


def test_it_replays_only_the_events_after_last_event_id_or_after(runs, api):
    thread_id, run_id, frames = finished_run(runs, LONG)
    assert read_frames(get_events(api, thread_id, run_id, last_event_id="3")) == frames[3:]
    assert read_frames(get_events(api, thread_id, run_id, after="2")) == frames[2:]
    # The header wins over the query, as a browser's EventSource sends it on reconnecting.
    assert read_frames(get_events(api, thread_id, run_id, last_event_id="4", after="1")) == frames[4:]
    last = frames[-1][0]
    assert read_frames(get_events(api, thread_id, run_id, last_event_id=str(last))) == []


def test_a_reader_that_joins_a_live_run_gets_what_its_own_stream_gets(runs, api):
    response = start(runs, LONG)
    own = iter_frames(response)
    first = [next(own), next(own)]
    reader = get_events(api, response.headers["X-Thread-Id"], response.headers["X-Run-Id"])
    assert read_frames(reader) == first + list(own)


def test_with_on_disconnect_continue_a_client_that_leaves_does_not_cancel_the_run(runs, api):
    response = start(runs, LONG, onDisconnect="continue")
    thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
    own = iter_frames(response)
    got = [next(own) for _ in range(3)]
    response.close()
    rest = read_frames(get_events(api, thread_id, run_id, last_event_id=str(got[-1][0])))
    events = [e for _, e in got + rest]
    assert [seq for seq, _ in got + rest] == list(range(1, len(events) + 1))
    assert events[-1]["type"] == "RUN_FINISHED"
    thread = runs.wait_idle(thread_id)
    assert thread["lastCompletedRunId"] == run_id and not thread.get("lastRunCancelled")
    messages = api.get(f"/v1/threads/{thread_id}").json()["messages"]
    stored = "".join(b["text"] for b in messages[-1]["content"] if b["type"] == "text")
    assert stored == "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert not messages[-1].get("isCancelled")


def test_without_on_disconnect_continue_a_client_that_leaves_still_cancels(runs):
    response = start(runs, "!slow")
    thread_id = response.headers["X-Thread-Id"]
    own = iter_frames(response)
    next(own), next(own)
    response.close()
    assert runs.wait_idle(thread_id)["lastRunCancelled"] is True


def test_it_rejects_on_disconnect_values_it_does_not_know(runs):
    response = runs.post_new("hello", onDisconnect="later")
    assert_problem(response, 400, "VALIDATION_ERROR")


def test_an_unknown_run_is_not_found(runs, api):
    thread_id, _, _ = finished_run(runs)
    assert_problem(get_events(api, thread_id, "run_unknown"), 404, "RUN_NOT_FOUND")


def test_another_users_or_projects_run_is_not_found(runs, api, other_project_key):
    from tests.conftest import Api

    thread_id, run_id, _ = finished_run(runs)
    bob = Api(api.base_url, api.session.headers["x-api-key"], user_key="bob")
    assert_problem(get_events(bob, thread_id, run_id), 404, "RUN_NOT_FOUND")
    stranger = Api(api.base_url, other_project_key)
    assert_problem(get_events(stranger, thread_id, run_id), 404, "RUN_NOT_FOUND")
    # The run, under another of the user's threads, is not found either.
    other_thread, _, _ = finished_run(runs)
    assert_problem(get_events(api, other_thread, run_id), 404, "RUN_NOT_FOUND")


def test_it_requires_a_user_key_or_token(runs, api):
    thread_id, run_id, _ = finished_run(runs)
    response = api.session.get(api.base_url + events_path(thread_id, run_id), timeout=30)
    assert_problem(response, 400, "VALIDATION_ERROR", field="userKey")


@pytest.mark.parametrize("value", ["abc", "-1", "1.5", "", "٣", "99999999999"])
def test_a_last_event_id_that_is_not_an_event_id_is_refused(runs, api, value):
    thread_id, run_id, _ = finished_run(runs)
    # An empty header is no header for most HTTP stacks, and a header is Latin-1: those go as `?after=`.
    if value and value.isascii():
        assert_problem(get_events(api, thread_id, run_id, last_event_id=value), 400, "VALIDATION_ERROR",
                       field="Last-Event-ID")
    assert_problem(get_events(api, thread_id, run_id, after=value), 400, "VALIDATION_ERROR", field="after")


def test_a_last_event_id_past_the_runs_last_event_is_refused(runs, api):
    thread_id, run_id, frames = finished_run(runs)
    last = frames[-1][0]
    body = assert_problem(get_events(api, thread_id, run_id, last_event_id=str(last + 1)), 400,
                          "VALIDATION_ERROR", field="Last-Event-ID")
    assert body["lastEventId"] == last


def test_an_agui_stream_carries_ids_too(api):
    body = {"threadId": "client-thread-1", "runId": "client-run-1", "messages": [
        {"id": "m1", "role": "user", "content": "hello"}], "tools": [], "context": [], "state": {},
        "forwardedProps": {"userKey": "alice"}}
    response = api.post("/v1/agui", body, stream=True)
    assert response.status_code == 200, response.text
    frames = read_frames(response)
    assert [seq for seq, _ in frames] == list(range(1, len(frames) + 1))
    assert frames[-1][1]["type"] == "RUN_FINISHED"
