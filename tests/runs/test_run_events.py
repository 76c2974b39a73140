"""The event stream of a run (docs/protocol.md#the-event-stream) and the thread's status fields, over real HTTP."""
from __future__ import annotations

import time

import pytest

from projects.config import ProjectSettings, project_settings_save
from runs.models import Run
from runs.services import ABANDONED_TEXT
from tests.runs.conftest import (
    CLOCK_TOOL,
    WEATHER_TOOL,
    Runs,
    event_of,
    paused_thread,
    text_of,
    tool_result,
)
from tests.support.sse import iter_events, read_events, types

pytestmark = pytest.mark.django_db(transaction=True)


def assert_timestamps(events: list[dict]) -> None:
    now_ms = time.time() * 1000
    for event in events:
        # Epoch milliseconds, not seconds: within the last hour.
        assert isinstance(event["timestamp"], int) and now_ms - 3_600_000 < event["timestamp"] <= now_ms + 1000, event


def assistant_messages(thread: dict) -> list[dict]:
    return [m for m in thread["messages"] if m["role"] == "assistant"
            and not any(b["type"] == "tool_result" for b in m["content"])]


def tool_results(thread: dict) -> list[dict]:
    return [b for m in thread["messages"] for b in m["content"] if b["type"] == "tool_result"]


# --- text ------------------------------------------------------------------------------------------

def test_a_text_run_streams_the_persisted_message(runs: Runs):
    response = runs.post_new("hello there")
    thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
    events = read_events(response)

    names = types(events)
    assert names[:2] == ["RUN_STARTED", "TEXT_MESSAGE_START"]
    assert names[-2:] == ["TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert set(names[2:-2]) == {"TEXT_MESSAGE_CONTENT"} and len(names[2:-2]) > 1
    assert events[0]["threadId"] == thread_id and events[0]["runId"] == run_id
    assert events[-1]["threadId"] == thread_id and events[-1]["runId"] == run_id
    start = events[1]
    assert start["role"] == "assistant" and start["messageId"].startswith("msg_")
    assert {e["messageId"] for e in events[1:-1]} == {start["messageId"]}
    assert text_of(events).startswith("(offline model) You said: hello there")
    assert_timestamps(events)

    thread = runs.thread(thread_id)
    user, answer = thread["messages"]
    assert user["role"] == "user" and user["content"] == [{"type": "text", "text": "hello there"}]
    assert answer["id"] == start["messageId"] and answer["role"] == "assistant"
    assert answer["content"] == [{"type": "text", "text": text_of(events)}]
    assert "isCancelled" not in answer


def test_a_new_thread_run_stores_the_initial_messages_and_metadata_first(runs: Runs, project):
    # A system message needs allowSystemPromptOverride (tests/runs/test_initial_message_roles.py).
    project_settings_save(project, ProjectSettings(allow_system_prompt_override=True))
    initial = [{"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
               {"role": "assistant", "content": [{"type": "text", "text": "Hi, how can I help?"}]}]
    thread_id, events = runs.run_new("hello", thread={"initialMessages": initial}, threadMetadata={"from": "test"})
    assert types(events)[-1] == "RUN_FINISHED"
    thread = runs.thread(thread_id)
    assert thread["metadata"] == {"from": "test"}
    assert [(m["role"], m["content"][0]["text"]) for m in thread["messages"][:3]] == [
        ("system", "Be brief."), ("assistant", "Hi, how can I help?"), ("user", "hello")]


def test_the_thread_is_idle_with_the_last_completed_run_after_a_text_run(runs: Runs):
    thread_id, events = runs.run_new("hello")
    thread = runs.thread(thread_id)
    assert thread["runStatus"] == "idle"
    assert thread["lastCompletedRunId"] == events[0]["runId"]
    for absent in ("currentRunId", "pendingToolCallIds", "lastRunCancelled", "lastRunError"):
        assert absent not in thread, thread


def test_the_thread_shows_the_streaming_run_while_it_streams(runs: Runs, api):
    response = runs.post_new("!slow answer")
    thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
    try:
        stream = iter_events(response)
        assert next(stream)["type"] == "RUN_STARTED"
        assert next(stream)["type"] == "TEXT_MESSAGE_START"
        # Text is flowing, so the run is past the lock's waiting state.
        thread = runs.thread(thread_id)
        assert thread["runStatus"] == "streaming" and thread["currentRunId"] == run_id
    finally:
        api.delete(f"/v1/threads/{thread_id}/runs/{run_id}")
        response.close()
    assert "currentRunId" not in runs.wait_idle(thread_id)


# --- client tools: pause -----------------------------------------------------------------------------

@pytest.mark.both_dbs
def test_a_client_tool_call_pauses_the_run_with_the_thread_already_idle(runs: Runs):
    response = runs.post_new('What is the weather? get_weather {"city": "Paris"}', tools=[WEATHER_TOOL])
    thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
    stream = iter_events(response)
    events = []
    for event in stream:
        events.append(event)
        if event.get("name") == "tambo.run.awaiting_input":
            break
    # The lock was released and the pending ids stored before the client hears it may answer.
    seen_then = runs.thread(thread_id)
    events += list(stream)

    names = types(events)
    assert names == ["RUN_STARTED", "TOOL_CALL_START", *["TOOL_CALL_ARGS"] * (len(names) - 5),
                     "TOOL_CALL_END", "tambo.run.awaiting_input", "RUN_FINISHED"], names
    start = event_of(events, "TOOL_CALL_START")
    call_id = start["toolCallId"]
    assert start["toolCallName"] == "get_weather" and start["parentMessageId"].startswith("msg_")
    arguments = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS")
    assert arguments == '{"city": "Paris"}'
    assert all(e["toolCallId"] == call_id for e in events if e["type"].startswith("TOOL_CALL_"))
    awaiting = event_of(events, "CUSTOM", "tambo.run.awaiting_input")
    assert awaiting["value"] == {"pendingToolCalls": [
        {"toolCallId": call_id, "toolName": "get_weather", "arguments": '{"city": "Paris"}'}]}
    finished = events[-1]
    assert finished["runId"] == run_id and finished["outcome"]["pendingToolCallIds"] == [call_id]
    assert finished["outcome"]["type"] == "success"
    assert_timestamps(events)

    assert seen_then["runStatus"] == "idle" and "currentRunId" not in seen_then
    assert seen_then["pendingToolCallIds"] == [call_id]
    assert seen_then["lastCompletedRunId"] == run_id
    assert Run.objects.get(id=run_id).status == Run.Status.AWAITING_INPUT
    (call_message,) = assistant_messages(runs.thread(thread_id))
    assert call_message["id"] == start["parentMessageId"]
    assert call_message["content"] == [{"type": "tool_use", "id": call_id, "name": "get_weather",
                                        "input": {"city": "Paris"}}]


def test_several_tool_calls_in_one_step_are_all_pending(runs: Runs):
    _, events = runs.run_new('get_weather and then read_clock {"city": "Rome"}', tools=[WEATHER_TOOL, CLOCK_TOOL])
    starts = [e for e in events if e["type"] == "TOOL_CALL_START"]
    assert [s["toolCallName"] for s in starts] == ["get_weather", "read_clock"]
    assert len({s["toolCallId"] for s in starts}) == 2
    assert len({s["parentMessageId"] for s in starts}) == 1
    assert types(events).count("TOOL_CALL_END") == 2
    pending = event_of(events, "CUSTOM", "tambo.run.awaiting_input")["value"]["pendingToolCalls"]
    assert [(p["toolCallId"], p["toolName"]) for p in pending] == [(s["toolCallId"], s["toolCallName"]) for s in starts]
    assert events[-1]["outcome"]["pendingToolCallIds"] == [s["toolCallId"] for s in starts]


# --- client tools: continue or abandon ---------------------------------------------------------------

@pytest.mark.both_dbs
def test_a_continuation_stores_the_results_and_the_model_answers_from_them(runs: Runs):
    thread_id, run_id, (call_id,) = paused_thread(runs)
    message = {"role": "user", "content": [tool_result(call_id, "sunny, 24 C")]}
    response = runs.post(thread_id, message, previousRunId=run_id)
    assert response.status_code == 200, response.text
    events = read_events(response)

    assert types(events)[0] == "RUN_STARTED" and types(events)[-1] == "RUN_FINISHED"
    assert text_of(events) == "Tool get_weather returned: sunny, 24 C"
    thread = runs.thread(thread_id)
    assert thread["runStatus"] == "idle" and "pendingToolCallIds" not in thread
    assert thread["lastCompletedRunId"] == response.headers["X-Run-Id"]
    assert tool_results(thread) == [tool_result(call_id, "sunny, 24 C")]
    stored = next(m for m in thread["messages"] if m["content"][0]["type"] == "tool_result")
    assert stored["role"] == "assistant" and len(stored["content"]) == 1
    assert thread["messages"][-1]["content"] == [{"type": "text", "text": "Tool get_weather returned: sunny, 24 C"}]


@pytest.mark.both_dbs
def test_a_continuation_answers_several_calls_at_once(runs: Runs):
    thread_id, run_id, (weather, clock) = paused_thread(
        runs, 'get_weather and read_clock {"city": "Rome"}', tools=[WEATHER_TOOL, CLOCK_TOOL])
    message = {"role": "user", "content": [tool_result(clock, "10:30"), tool_result(weather, "rain")]}
    events = runs.run(thread_id, message, previousRunId=run_id)
    assert text_of(events) == "Tool get_weather returned: rain\nTool read_clock returned: 10:30"
    assert "pendingToolCallIds" not in runs.thread(thread_id)


@pytest.mark.both_dbs
def test_a_continuation_may_pause_again(runs: Runs):
    thread_id, run_id, (call_id,) = paused_thread(runs)
    message = {"role": "user", "content": [tool_result(call_id, "sunny"),
                                           {"type": "text", "text": 'now read_clock {"tz": "UTC"}'}]}
    events = runs.run(thread_id, message, previousRunId=run_id, tools=[WEATHER_TOOL, CLOCK_TOOL])
    pending = event_of(events, "CUSTOM", "tambo.run.awaiting_input")["value"]["pendingToolCalls"]
    assert [p["toolName"] for p in pending] == ["read_clock"]
    thread = runs.thread(thread_id)
    assert thread["pendingToolCallIds"] == [pending[0]["toolCallId"]]
    assert thread["lastCompletedRunId"] == events[0]["runId"]


@pytest.mark.both_dbs
def test_a_plain_message_abandons_pending_calls_and_goes_on(runs: Runs):
    thread_id, run_id, (call_id,) = paused_thread(runs)
    events = runs.run(thread_id, "never mind, tell me a joke", previousRunId=run_id, tools=[WEATHER_TOOL])
    assert types(events)[-1] == "RUN_FINISHED"
    assert text_of(events).startswith("(offline model) You said: never mind, tell me a joke")
    thread = runs.thread(thread_id)
    assert "pendingToolCallIds" not in thread
    assert tool_results(thread) == [{"type": "tool_result", "toolUseId": call_id, "isError": True,
                                     "content": [{"type": "text", "text": ABANDONED_TEXT}]}]
    roles_and_kinds = [(m["role"], m["content"][0]["type"]) for m in thread["messages"]]
    assert roles_and_kinds == [("user", "text"), ("assistant", "tool_use"), ("assistant", "tool_result"),
                               ("user", "text"), ("assistant", "text")]


# --- model errors ------------------------------------------------------------------------------------

def test_a_model_error_ends_the_stream_with_one_run_error(runs: Runs):
    response = runs.post_new("!fail now")
    assert response.status_code == 200
    thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
    events = read_events(response)
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    error = events[-1]
    assert error["code"] == "LLM_SERVER_ERROR" and error["category"] == "server_error"
    assert error["isRetryable"] is True and error["message"]
    assert "Traceback" not in error["message"]
    assert_timestamps(events)

    thread = runs.thread(thread_id)
    assert thread["runStatus"] == "idle" and "currentRunId" not in thread
    assert thread["lastRunError"] == {"code": "LLM_SERVER_ERROR", "message": error["message"]}
    assert thread["lastCompletedRunId"] == run_id
    # The admin shows how the run ended.
    run = Run.objects.get(id=run_id)
    assert (run.status, run.error_code) == (Run.Status.FAILED, "LLM_SERVER_ERROR") and run.finished_at


def test_a_good_run_after_a_failed_one_clears_the_last_error(runs: Runs):
    thread_id, events = runs.run_new("!fail now")
    after = runs.run(thread_id, "hello again", previousRunId=events[0]["runId"])
    assert types(after)[-1] == "RUN_FINISHED"
    assert "lastRunError" not in runs.thread(thread_id)


def test_additional_context_with_a_continuation_leaves_the_tool_answer_intact(runs: Runs):
    thread_id, run_id, (call_id,) = paused_thread(runs)
    message = {"role": "user", "content": [tool_result(call_id, "sunny")],
               "additionalContext": {"screen": "forecast"}}
    events = runs.run(thread_id, message, previousRunId=run_id)
    # The context is given to the model with the results; the model still answers from the results.
    assert text_of(events) == "Tool get_weather returned: sunny"


# --- server tools --------------------------------------------------------------------------------------

def test_a_server_tool_runs_inside_the_run_and_the_model_goes_on(runs: Runs, project):
    from tools.models import ProjectTool

    ProjectTool.objects.create(project=project, name="calculate")
    thread_id, events = runs.run_new('calculate {"expression": "(2 + 3) * 4"}')
    names = types(events)
    assert names[-1] == "RUN_FINISHED" and "tambo.run.awaiting_input" not in names
    assert names.index("TOOL_CALL_END") < names.index("TOOL_CALL_RESULT") < names.index("TEXT_MESSAGE_START")
    start, result = event_of(events, "TOOL_CALL_START"), event_of(events, "TOOL_CALL_RESULT")
    assert start["toolCallName"] == "calculate"
    assert result["toolCallId"] == start["toolCallId"] and result["role"] == "tool"
    assert result["content"] == "20" and result["messageId"] == start["parentMessageId"]
    assert text_of(events) == "Tool calculate returned: 20"
    thread = runs.thread(thread_id)
    assert "pendingToolCallIds" not in thread
    assert tool_results(thread) == [tool_result(start["toolCallId"], "20")]


def test_a_failing_server_tool_is_an_error_result_not_a_failed_run(runs: Runs, project):
    from tools.models import ProjectTool

    ProjectTool.objects.create(project=project, name="calculate")
    _, events = runs.run_new('calculate {"expression": "1 / 0"}')
    assert types(events)[-1] == "RUN_FINISHED"
    assert text_of(events).startswith("Tool calculate returned: Error")
