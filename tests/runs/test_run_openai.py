"""Runs through the live server with the `openai` provider against the scripted fake vendor."""
from __future__ import annotations

import json
from typing import Iterator

import pytest

from providers.base import APP_CONTEXT_LABEL
from tests.conftest import Api
from tests.runs.conftest import CLOCK_TOOL, WEATHER_TOOL, Runs, event_of, text_of, tool_result
from tests.support.batches import coarsens
from tests.support.fake_openai import HTTPError, Stall, StreamError, Text, ToolCall, ToolCalls
from tests.support.fixtures_openai import Vendor, fake, vendor  # noqa: F401 - fixtures
from tests.support.live import LiveServer, openai_live_server
from tests.support.sse import iter_events, types

pytestmark = pytest.mark.django_db(transaction=True)

VENDOR_KEY = "sk-secret-test"


@pytest.fixture(scope="module")
def openai_server(vendor, django_db_setup, django_db_blocker) -> Iterator[LiveServer]:
    with openai_live_server("openai", vendor.base_url, VENDOR_KEY, OPENAI_MODEL="fake-default") as server:
        yield server


@pytest.fixture
def runs(openai_server, api_key) -> Runs:
    return Runs(Api(openai_server.url, api_key))


def assert_no_key(events: list[dict]) -> None:
    assert VENDOR_KEY not in json.dumps(events)


# --- text --------------------------------------------------------------------------------------------

def test_text_deltas_stream_as_the_vendor_sends_them(runs: Runs, fake: Vendor):
    fake.script(Text(["Hel", "lo, ", "wor", "ld"]))
    thread_id, events = runs.run_new("hi there")
    # Deltas that are ready together may go out as one event (runs/stream/sse.py merge_text): the text
    # is the vendor's, cut only where the vendor cut it.
    deltas = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert "".join(deltas) == "Hello, world"
    assert all(d in ("Hel", "Hello, ", "Hello, wor", "Hello, world", "lo, ", "lo, wor", "lo, world", "wor", "world",
                     "ld") for d in deltas), deltas
    assert types(events)[-1] == "RUN_FINISHED"
    answer = runs.thread(thread_id)["messages"][-1]
    assert answer["content"] == [{"type": "text", "text": "Hello, world"}]
    (request,) = fake.requests
    assert request.api_key == VENDOR_KEY and request.body["stream"] is True
    assert request.body["model"] == "fake-default"
    assert request.body["messages"][-1] == {"role": "user", "content": "hi there"}
    assert "tools" not in request.body and "tool_choice" not in request.body
    assert_no_key(events)


def test_run_options_reach_the_vendor_request(runs: Runs, fake: Vendor, project):
    from django.conf import settings

    from projects.config import ProjectSettings, project_settings_save

    # A model name beside the server's own must be offered by the project (safe defaults).
    project_settings_save(project, ProjectSettings(allowed_models=["gpt-test-x"]))
    fake.script(Text("ok"), Text("ok"))
    thread_id, events = runs.run_new("hi", model="gpt-test-x", maxTokens=77, temperature=0.3,
                                      tools=[WEATHER_TOOL], toolChoice={"name": "get_weather"})
    runs.run(thread_id, "again", previousRunId=events[0]["runId"], tools=[WEATHER_TOOL], toolChoice="required")
    first, second = fake.requests
    assert first.body["model"] == "gpt-test-x"
    assert first.body["max_tokens"] == 77 and first.body["temperature"] == 0.3
    assert first.body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert [t["function"]["name"] for t in first.body["tools"]] == ["get_weather"]
    assert first.body["tools"][0]["function"]["parameters"] == WEATHER_TOOL["inputSchema"]
    assert second.body["tool_choice"] == "required"
    # Without maxTokens a call asks for the output cap: the server's default, the project setting none.
    assert second.body["model"] == "fake-default" and second.body["max_tokens"] == settings.DEFAULT_MAX_OUTPUT_TOKENS


# --- tool calls --------------------------------------------------------------------------------------

def test_tool_call_fragments_split_mid_token_are_passed_on_and_reassembled(runs: Runs, fake: Vendor):
    fragments = ['{"ci', 'ty": "Pa', 'ris", "unit', 's": "C"}']
    fake.script(ToolCalls([ToolCall("get_weather", fragments, id="call_vendor_1")], text=["Let me ", "check."]))
    thread_id, events = runs.run_new("weather in Paris?", tools=[WEATHER_TOOL])

    # Text deltas ready together may go out as one event (runs/stream/sse.py merge_text).
    names = [n for i, n in enumerate(types(events)) if not (n == "TEXT_MESSAGE_CONTENT" == types(events)[i - 1])]
    assert names[:4] == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"]
    assert "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT") == "Let me check."
    assert names[-3:] == ["TOOL_CALL_END", "tambo.run.awaiting_input", "RUN_FINISHED"]
    start = event_of(events, "TOOL_CALL_START")
    assert start == {**start, "toolCallId": "call_vendor_1", "toolCallName": "get_weather",
                     "parentMessageId": events[1]["messageId"]}
    # Fragments read together go out as one (providers/batching.py).
    assert coarsens([e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS"], fragments)
    pending = event_of(events, "CUSTOM", "tambo.run.awaiting_input")["value"]["pendingToolCalls"]
    assert pending == [{"toolCallId": "call_vendor_1", "toolName": "get_weather",
                        "arguments": '{"city": "Paris", "units": "C"}'}]
    assert events[-1]["outcome"]["pendingToolCallIds"] == ["call_vendor_1"]
    thread = runs.thread(thread_id)
    assert thread["pendingToolCallIds"] == ["call_vendor_1"]
    assert thread["messages"][-1]["content"] == [
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "call_vendor_1", "name": "get_weather", "input": {"city": "Paris", "units": "C"}}]


def test_several_interleaved_tool_calls_in_one_step(runs: Runs, fake: Vendor):
    fake.script(ToolCalls([ToolCall("get_weather", ['{"city"', ': "Oslo"}']),
                           ToolCall("read_clock", ["{", "}"])], interleave=True))
    _, events = runs.run_new("weather and time?", tools=[WEATHER_TOOL, CLOCK_TOOL])
    starts = [e for e in events if e["type"] == "TOOL_CALL_START"]
    assert [(s["toolCallId"], s["toolCallName"]) for s in starts] == [("call_0", "get_weather"),
                                                                      ("call_1", "read_clock")]
    for call_id, expected in (("call_0", '{"city": "Oslo"}'), ("call_1", "{}")):
        assert "".join(e["delta"] for e in events
                       if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == call_id) == expected
    pending = event_of(events, "CUSTOM", "tambo.run.awaiting_input")["value"]["pendingToolCalls"]
    assert [(p["toolName"], p["arguments"]) for p in pending] == [("get_weather", '{"city": "Oslo"}'),
                                                                 ("read_clock", "{}")]


def test_a_continuation_sends_the_results_and_additional_context_to_the_vendor(runs: Runs, fake: Vendor):
    fake.script(ToolCalls([ToolCall("get_weather", ['{"city": "Oslo"}'], id="call_w")]), Text("It is sunny."))
    thread_id, events = runs.run_new("weather?", tools=[WEATHER_TOOL])
    message = {"role": "user", "content": [tool_result("call_w", "sunny, 20 C")],
               "additionalContext": {"screen": "forecast-page"}}
    after = runs.run(thread_id, message, previousRunId=events[0]["runId"], tools=[WEATHER_TOOL])
    assert text_of(after) == "It is sunny."

    sent = fake.requests[-1].body["messages"]
    assert sent[-3]["role"] == "assistant"
    assert sent[-3]["tool_calls"] == [{"id": "call_w", "type": "function",
                                       "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]
    assert sent[-2] == {"role": "tool", "tool_call_id": "call_w", "content": "sunny, 20 C"}
    # The context is the application's data in a user turn, never a system message (issue 33, item 6).
    assert sent[-1]["role"] == "user" and "forecast-page" in sent[-1]["content"][0]["text"]
    assert sent[-1]["content"][0]["text"].startswith(APP_CONTEXT_LABEL)
    assert [m["role"] for m in sent].count("system") == 1
    assert "pendingToolCallIds" not in runs.thread(thread_id)


def test_additional_context_of_a_plain_message_reaches_the_vendor(runs: Runs, fake: Vendor):
    fake.script(Text("ok"))
    runs.run_new({"role": "user", "content": [{"type": "text", "text": "what am I looking at?"}],
                  "additionalContext": {"selection": "row 42"}})
    sent = fake.requests[-1].body["messages"]
    # Inside the user turn, labelled as the application's data, before the user's words: a copied key's
    # context must not read as instructions (it was a second system message).
    assert [m["role"] for m in sent] == ["system", "user"]
    context, words = sent[-1]["content"]
    assert context["text"].startswith(APP_CONTEXT_LABEL) and "row 42" in context["text"]
    assert words == {"type": "text", "text": "what am I looking at?"}


def test_additional_context_is_a_system_message_only_where_the_project_allows_overrides(runs: Runs, fake: Vendor,
                                                                                         project):
    from projects.config import ProjectSettings, project_settings_save

    project_settings_save(project, ProjectSettings(allow_system_prompt_override=True))
    fake.script(Text("ok"))
    runs.run_new({"role": "user", "content": [{"type": "text", "text": "hi"}],
                  "additionalContext": {"selection": "row 7"}})
    sent = fake.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["system", "system", "user"] and "row 7" in sent[1]["content"]


# --- vendor errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("reply", "code", "category", "retryable"), [
    (HTTPError(429, retry_after=3), "LLM_RATE_LIMITED", "server_error", True),
    (HTTPError(500), "LLM_SERVER_ERROR", "server_error", True),
    (HTTPError(400, message=f"bad request, key {VENDOR_KEY}"), "LLM_CLIENT_ERROR", "client_error", False),
    (HTTPError(401, message=f"Incorrect API key provided: {VENDOR_KEY}"), "LLM_CLIENT_ERROR", "client_error", False),
    (StreamError(after=["par", "tial"], message=f"upstream broke near {VENDOR_KEY}"), "LLM_SERVER_ERROR",
     "server_error", True),
])
def test_vendor_errors_end_the_run_with_a_safe_run_error(runs: Runs, fake: Vendor, reply, code, category,
                                                         retryable):
    fake.script(reply)
    thread_id, events = runs.run_new("hi")
    assert types(events)[0] == "RUN_STARTED" and types(events)[-1] == "RUN_ERROR"
    assert types(events).count("RUN_ERROR") == 1 and "RUN_FINISHED" not in types(events)
    error = events[-1]
    assert (error["code"], error["category"], error["isRetryable"]) == (code, category, retryable)
    assert_no_key(events)
    assert "Traceback" not in error["message"]
    thread = runs.thread(thread_id)
    assert thread["runStatus"] == "idle" and thread["lastRunError"]["code"] == code
    assert VENDOR_KEY not in json.dumps(thread)


def test_the_vendor_key_never_reaches_the_server_log(runs: Runs, fake: Vendor, openai_server):
    fake.script(HTTPError(401, message=f"Incorrect API key provided: {VENDOR_KEY}"),
                StreamError(message=f"failure for key {VENDOR_KEY}"), HTTPError(503, message=VENDOR_KEY))
    for _ in range(3):
        _, events = runs.run_new("hi")
        assert types(events)[-1] == "RUN_ERROR"
    assert VENDOR_KEY not in openai_server.log_text()


# --- cancel ------------------------------------------------------------------------------------------

def read_until_text(response) -> tuple[Iterator[dict], list[dict]]:
    stream = iter_events(response)
    events = []
    for event in stream:
        events.append(event)
        if event["type"] == "TEXT_MESSAGE_CONTENT":
            return stream, events
    raise AssertionError(f"no text before the end: {types(events)}")


def test_a_stalled_vendor_stream_is_cancelled_by_delete(runs: Runs, fake: Vendor):
    fake.script(Stall(after=["thinking"], seconds=60))
    response = runs.post_new("hi")
    thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
    stream, events = read_until_text(response)
    cancelled = runs.api.delete(f"/v1/threads/{thread_id}/runs/{run_id}")
    assert cancelled.status_code == 200, cancelled.text
    events += list(stream)

    assert types(events)[-1] == "RUN_ERROR" and events[-1]["code"] == "CANCELLED"
    # The vendor connection was closed rather than left to run out its stall.
    assert fake.requests[-1].disconnected.wait(timeout=10)
    thread = runs.wait_idle(thread_id)
    assert thread["lastRunCancelled"] is True
    answer = thread["messages"][-1]
    assert answer["isCancelled"] is True and answer["content"] == [{"type": "text", "text": "thinking"}]


def test_closing_the_stream_closes_the_vendor_connection(runs: Runs, fake: Vendor):
    fake.script(Stall(after=["thinking"], seconds=60))
    response = runs.post_new("hi")
    thread_id = response.headers["X-Thread-Id"]
    read_until_text(response)
    response.close()
    assert fake.requests[-1].disconnected.wait(timeout=10)
    thread = runs.wait_idle(thread_id)
    assert thread["lastRunCancelled"] is True and thread["messages"][-1]["isCancelled"] is True


def test_each_event_is_one_data_line_and_none_shows_the_key(runs: Runs, fake: Vendor):
    fake.script(ToolCalls([ToolCall("get_weather", ['{"city": "Oslo"}'])]))
    response = runs.post_new("weather?", tools=[WEATHER_TOOL])
    raw = b"".join(response.iter_content(chunk_size=None))
    assert VENDOR_KEY.encode() not in raw
    frames = raw.split(b"\n\n")
    assert frames[-1] == b""
    for seq, frame in enumerate(frames[:-1], start=1):
        # An `id:` line (docs/protocol.md#resumable-runs), then the event's one `data:` line.
        id_line, data_line = frame.split(b"\n")
        assert id_line == b"id: %d" % seq, frame
        assert data_line.startswith(b"data: "), frame
        json.loads(data_line[len(b"data: "):])


def test_a_stall_before_any_output_is_cancelled_by_delete(runs: Runs, fake: Vendor):
    fake.script(Stall(seconds=60))
    response = runs.post_new("hi")
    thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
    stream = iter_events(response)
    assert next(stream)["type"] == "RUN_STARTED"
    (stalled,) = fake.wait_requests(1)
    cancelled = runs.api.delete(f"/v1/threads/{thread_id}/runs/{run_id}")
    assert cancelled.status_code == 200, cancelled.text
    events = list(stream)
    assert types(events) == ["RUN_ERROR"] and events[0]["code"] == "CANCELLED"
    assert stalled.disconnected.wait(timeout=10)
    thread = runs.wait_idle(thread_id)
    assert thread["lastRunCancelled"] is True


# --- what the model gets wrong ----------------------------------------------------------------------

def test_an_error_mid_answer_keeps_the_partial_text(runs: Runs, fake: Vendor):
    fake.script(StreamError(after=["Half an ", "answer"]))
    thread_id, events = runs.run_new("hi")
    assert text_of(events) == "Half an answer"
    assert types(events)[-1] == "RUN_ERROR" and events[-1]["code"] == "LLM_SERVER_ERROR"
    thread = runs.thread(thread_id)
    assert thread["messages"][-1]["content"] == [{"type": "text", "text": "Half an answer"}]
    assert "isCancelled" not in thread["messages"][-1]


def test_a_tool_the_model_invents_gets_an_error_result_and_the_model_goes_on(runs: Runs, fake: Vendor):
    fake.script(ToolCalls([ToolCall("launch_rocket", ['{"now": true}'], id="call_x")]), Text("Sorry."))
    thread_id, events = runs.run_new("launch it", tools=[WEATHER_TOOL])
    assert types(events)[-1] == "RUN_FINISHED" and "tambo.run.awaiting_input" not in types(events)
    assert text_of(events) == "Sorry."
    result = event_of(events, "TOOL_CALL_RESULT")
    assert result["toolCallId"] == "call_x" and "launch_rocket" in result["content"]
    sent = fake.requests[-1].body["messages"]
    assert sent[-1]["role"] == "tool" and sent[-1]["tool_call_id"] == "call_x"
    assert sent[-1]["content"].startswith("Error")
    assert "pendingToolCallIds" not in runs.thread(thread_id)
