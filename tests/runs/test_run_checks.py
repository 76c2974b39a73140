"""Starting a run: every check of docs/protocol.md#starting-a-run is a plain HTTP problem before any SSE byte."""
from __future__ import annotations

import pytest

from tests.conftest import Api
from tests.runs.conftest import WEATHER_TOOL, Runs, event_of, paused_thread, text_message, tool_result
from tests.support.sse import read_events, types

pytestmark = pytest.mark.django_db(transaction=True)


def assert_problem(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"].startswith("application/problem+json")
    assert "X-Run-Id" not in response.headers
    body = response.json()
    assert body["code"] == code and body["status"] == status
    assert body["type"] == f"urn:tambo:error:{code.lower()}"
    return body


def thread_ids(api: Api) -> list[str]:
    response = api.get("/v1/threads", limit=100)
    assert response.status_code == 200, response.text
    return [t["id"] for t in response.json()["threads"]]


# --- 1. body shape ---------------------------------------------------------------------------------

def test_it_rejects_a_body_that_is_not_json(api):
    response = api.session.post(api.base_url + "/v1/threads/runs", data=b"{not json",
                                headers={"Content-Type": "application/json"}, timeout=30)
    assert assert_problem(response, 400, "VALIDATION_ERROR")["field"] == "body"


@pytest.mark.parametrize(("change", "field"), [
    ({"message": None}, "message"),
    ({"message": {"role": "user", "content": []}}, "message.content"),
    ({"message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}}, "message.role"),
    ({"message": {"role": "user", "content": [{"type": "text", "text": 5}]}}, "message.content[0].text"),
    ({"temperature": "1"}, "temperature"),
    ({"temperature": 2.5}, "temperature"),
    ({"maxTokens": "100"}, "maxTokens"),
    ({"toolChoice": "sometimes"}, "toolChoice"),
    ({"tools": [{"name": "", "description": "x"}]}, "tools[0].name"),
    ({"previousRunId": 42}, "previousRunId"),
])
def test_it_rejects_a_wrong_field_naming_it(runs: Runs, api, change, field):
    body = {**runs.body("hello"), **change}
    response = api.post("/v1/threads/runs", body)
    problem = assert_problem(response, 400, "VALIDATION_ERROR")
    assert problem["field"] == field, problem
    assert thread_ids(api) == []


def test_it_ignores_unknown_top_level_fields(runs: Runs):
    thread_id, events = runs.run_new("hello", someFutureField={"x": 1})
    assert types(events)[-1] == "RUN_FINISHED"
    assert thread_id.startswith("thr_")


def test_it_rejects_a_run_without_user_key(api):
    response = api.post("/v1/threads/runs", {"message": text_message("hello")})
    assert assert_problem(response, 400, "VALIDATION_ERROR")["field"] == "userKey"
    assert thread_ids(api) == []


def test_it_takes_the_user_key_from_the_thread_spec(api):
    response = api.post("/v1/threads/runs", {"thread": {"userKey": "alice", "metadata": {"k": "v"}},
                                             "message": text_message("hello")}, stream=True)
    assert response.status_code == 200, response.text
    read_events(response)
    thread = api.get(f"/v1/threads/{response.headers['X-Thread-Id']}").json()
    assert thread["userKey"] == "alice" and thread["metadata"] == {"k": "v"}


# --- 2. visibility ---------------------------------------------------------------------------------

def test_it_answers_404_for_an_unknown_thread(runs: Runs):
    assert_problem(runs.post("thr_doesnotexist", "hello"), 404, "THREAD_NOT_FOUND")


def test_it_answers_404_for_another_users_thread(runs: Runs, api):
    thread_id, _ = runs.run_new("hello")
    bob = Runs(Api(api.base_url, api.session.headers["x-api-key"], user_key="bob"))
    assert_problem(bob.post(thread_id, "hello"), 404, "THREAD_NOT_FOUND")


def test_it_answers_404_for_another_projects_thread(runs: Runs, api, other_project_key):
    thread_id, events = runs.run_new("hello")
    stranger = Runs(Api(api.base_url, other_project_key))
    assert_problem(stranger.post(thread_id, "hello", previousRunId=events[0]["runId"]), 404, "THREAD_NOT_FOUND")
    # Nothing was stored on the real thread.
    assert len(runs.thread(thread_id)["messages"]) == 2


def test_the_body_is_checked_before_the_thread(runs: Runs, api):
    body = {**runs.body("hello"), "temperature": "hot"}
    assert_problem(api.post("/v1/threads/thr_doesnotexist/runs", body), 400, "VALIDATION_ERROR")


def test_the_thread_is_checked_before_previous_run_id(runs: Runs):
    assert_problem(runs.post("thr_doesnotexist", "hello", previousRunId="run_x"), 404, "THREAD_NOT_FOUND")


def test_it_rejects_a_blank_user_key(api):
    response = api.post("/v1/threads/runs", {"userKey": "   ", "message": text_message("hello")})
    assert assert_problem(response, 400, "VALIDATION_ERROR")["field"] == "userKey"
    assert thread_ids(api) == []


def test_it_answers_401_without_a_key(api):
    anonymous = Api(api.base_url, None)
    assert_problem(anonymous.post("/v1/threads/runs", Runs(anonymous).body("hello")), 401, "UNAUTHORIZED")


# --- 3. previousRunId ------------------------------------------------------------------------------

def test_it_requires_previous_run_id_once_the_thread_has_a_completed_run(runs: Runs):
    thread_id, _ = runs.run_new("hello")
    assert_problem(runs.post(thread_id, "again"), 400, "INVALID_PREVIOUS_RUN")


def test_it_rejects_a_previous_run_id_that_is_not_the_last_completed_run(runs: Runs):
    thread_id, events = runs.run_new("hello")
    first_run = events[0]["runId"]
    runs.run(thread_id, "again", previousRunId=first_run)
    problem = assert_problem(runs.post(thread_id, "third", previousRunId=first_run), 400, "INVALID_PREVIOUS_RUN")
    assert problem["lastCompletedRunId"] == runs.thread(thread_id)["lastCompletedRunId"] != first_run


def test_it_rejects_a_previous_run_id_on_a_thread_without_runs(runs: Runs, api):
    thread_id = api.post("/v1/threads", {"userKey": "alice"}).json()["id"]
    assert_problem(runs.post(thread_id, "hello", previousRunId="run_made_up"), 400, "INVALID_PREVIOUS_RUN")


def test_tool_results_without_previous_run_id_are_refused_and_the_calls_stay_pending(runs: Runs):
    thread_id, _, (call_id,) = paused_thread(runs)
    message = {"role": "user", "content": [tool_result(call_id, "sunny")]}
    assert_problem(runs.post(thread_id, message), 400, "INVALID_PREVIOUS_RUN")
    assert runs.thread(thread_id)["pendingToolCallIds"] == [call_id]


def test_it_accepts_the_last_completed_run_as_previous_run_id(runs: Runs):
    thread_id, events = runs.run_new("hello")
    again = runs.run(thread_id, "again", previousRunId=events[0]["runId"])
    assert types(again)[-1] == "RUN_FINISHED"


# --- 4. tool results -------------------------------------------------------------------------------

TWO_CALLS = 'Use get_weather and read_clock {"city": "Oslo"}'
CLOCK = {"name": "read_clock", "description": "The user's clock.", "inputSchema": {"type": "object"}}


@pytest.mark.both_dbs
def test_it_names_the_missing_tool_results(runs: Runs):
    thread_id, run_id, (first, second) = paused_thread(runs, TWO_CALLS, tools=[WEATHER_TOOL, CLOCK])
    message = {"role": "user", "content": [tool_result(first, "sunny")]}
    problem = assert_problem(runs.post(thread_id, message, previousRunId=run_id), 400, "INVALID_TOOL_RESULT")
    assert problem["missingToolCallIds"] == [second] and problem["extraToolCallIds"] == []
    assert runs.thread(thread_id)["pendingToolCallIds"] == [first, second]


def test_it_names_the_extra_tool_results(runs: Runs):
    thread_id, run_id, (pending,) = paused_thread(runs)
    message = {"role": "user", "content": [tool_result(pending, "sunny"), tool_result("call_unknown", "?")]}
    problem = assert_problem(runs.post(thread_id, message, previousRunId=run_id), 400, "INVALID_TOOL_RESULT")
    assert problem["extraToolCallIds"] == ["call_unknown"] and problem["missingToolCallIds"] == []


def test_it_rejects_tool_results_when_nothing_is_pending(runs: Runs):
    thread_id, events = runs.run_new("hello")
    message = {"role": "user", "content": [tool_result("call_x", "sunny")]}
    assert_problem(runs.post(thread_id, message, previousRunId=events[0]["runId"]), 400, "INVALID_TOOL_RESULT")


def test_it_rejects_tool_results_on_a_new_thread_without_creating_it(runs: Runs, api):
    response = runs.post_new({"role": "user", "content": [tool_result("call_x", "sunny")]})
    assert_problem(response, 400, "INVALID_TOOL_RESULT")
    assert thread_ids(api) == []


def test_it_rejects_a_previous_run_id_on_a_new_thread_without_creating_it(runs: Runs, api):
    initial = [{"role": "system", "content": [{"type": "text", "text": "Be brief."}]}]
    response = runs.post_new("hello", previousRunId="run_made_up", thread={"initialMessages": initial})
    assert_problem(response, 400, "INVALID_PREVIOUS_RUN")
    assert thread_ids(api) == []
    from threads.models import Message

    assert not Message.objects.exists()


@pytest.mark.both_dbs
def test_duplicate_tool_results_collapse_and_the_last_wins(runs: Runs):
    thread_id, run_id, (pending,) = paused_thread(runs)
    message = {"role": "user", "content": [tool_result(pending, "first answer"), tool_result(pending, "rainy")]}
    events = runs.run(thread_id, message, previousRunId=run_id)
    assert types(events)[-1] == "RUN_FINISHED"
    results = [b for m in runs.thread(thread_id)["messages"] for b in m["content"] if b["type"] == "tool_result"]
    assert [r["content"][0]["text"] for r in results] == ["rainy"]
    assert "Tool get_weather returned: rainy" in "".join(
        e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


# --- 5. the lock -----------------------------------------------------------------------------------

@pytest.mark.both_dbs
def test_it_answers_409_with_the_current_run_while_another_run_streams(runs: Runs, api):
    slow = runs.post_new("!slow please")
    assert slow.status_code == 200
    thread_id, slow_run = slow.headers["X-Thread-Id"], slow.headers["X-Run-Id"]
    try:
        runs.wait_status(thread_id, "streaming")
        problem = assert_problem(runs.post(thread_id, "me too"), 409, "CONCURRENT_RUN")
        assert problem["currentRunId"] == slow_run
    finally:
        assert api.delete(f"/v1/threads/{thread_id}/runs/{slow_run}").status_code == 200
        slow.close()
    runs.wait_idle(thread_id)


def test_checks_before_the_lock_win_over_the_lock(runs: Runs, api):
    slow = runs.post_new("!slow please")
    thread_id, slow_run = slow.headers["X-Thread-Id"], slow.headers["X-Run-Id"]
    try:
        runs.wait_status(thread_id, "streaming")
        message = {"role": "user", "content": [tool_result("call_x", "sunny")]}
        assert_problem(runs.post(thread_id, message), 400, "INVALID_TOOL_RESULT")
    finally:
        api.delete(f"/v1/threads/{thread_id}/runs/{slow_run}")
        slow.close()
    runs.wait_idle(thread_id)


# --- the answer ------------------------------------------------------------------------------------

def test_a_new_thread_run_answers_an_event_stream_with_its_ids(runs: Runs):
    response = runs.post_new("hello")
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"].startswith("text/event-stream")
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["X-Accel-Buffering"] == "no"
    thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
    assert thread_id.startswith("thr_") and run_id.startswith("run_")
    events = read_events(response)
    assert events[0]["threadId"] == thread_id and events[0]["runId"] == run_id


def test_a_run_on_a_thread_answers_an_event_stream_with_its_run_id(runs: Runs):
    thread_id, events = runs.run_new("hello")
    response = runs.post(thread_id, "again", previousRunId=events[0]["runId"])
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"].startswith("text/event-stream")
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["X-Accel-Buffering"] == "no"
    run_id = response.headers["X-Run-Id"]
    assert event_of(read_events(response), "RUN_STARTED")["runId"] == run_id
