"""A project backed by an external agent (docs/models.md#agents): a LangGraph graph served by
ag-ui-langgraph and a PydanticAI agent's AG-UI app, each answering /v1 runs through this server with
its own model (our fake OpenAI server), its own tool, the app's client tools and components."""
from __future__ import annotations

import json

import pytest

from tests.agents.conftest import Agent, agent_project
from tests.conftest import wait_for_idle_threads
from tests.support.fake_openai import Stall, Text, ToolCall, ToolCalls
from tests.support.run_requests import last_run_id, run, text_of
from tests.support.sse import iter_events, read_events, types

pytestmark = pytest.mark.django_db(transaction=True)

LOCATION_TOOL = {"name": "get_location", "description": "The user's location, from the browser.",
                 "inputSchema": {"type": "object", "properties": {}}}
CARD = {"name": "WeatherCard", "description": "Shows the weather of a city.",
        "propsSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}


def user_texts(request) -> list[str]:
    """What the agent's model was asked: the user turns' text, in order."""
    texts = []
    for message in request.body["messages"]:
        if message["role"] == "user":
            content = message["content"]
            texts.append(content if isinstance(content, str) else " ".join(p.get("text", "") for p in content))
    return texts


def test_the_agent_answers_a_run_with_its_models_text(on_agent: Agent, api):
    on_agent.fake.script(Text(["It is ", "sunny today."]))
    thread_id, events = run(api, "How is the weather?")
    assert types(events)[0] == "RUN_STARTED" and types(events)[-1] == "RUN_FINISHED", types(events)
    assert text_of(events) == "It is sunny today."
    (asked,) = on_agent.fake.requests
    assert any("How is the weather?" in text for text in user_texts(asked))
    stored = [m for m in api.thread(thread_id)["messages"] if m["role"] == "assistant"]
    assert [b["text"] for b in stored[-1]["content"]] == ["It is sunny today."]

    from runs.models import Run

    recorded = Run.objects.get(thread_id=thread_id)
    assert recorded.answered_model == "agent:weather"
    assert recorded.usage["total_tokens"] > 0  # the agent's own count, or the estimate without one


def test_the_next_turn_sends_the_agent_the_whole_thread(on_agent: Agent, api):
    on_agent.fake.script(Text("First answer."), Text("Second answer."))
    thread_id, _ = run(api, "first question")
    _, events = run(api, "second question", thread_id=thread_id, previousRunId=last_run_id(api, thread_id))
    assert text_of(events) == "Second answer."
    second = on_agent.fake.requests[-1]
    contents = [(m["role"], m.get("content")) for m in second.body["messages"] if m["role"] != "system"]
    assert contents[-3:] == [("user", "first question"), ("assistant", "First answer."), ("user", "second question")], contents


def test_the_agents_own_tool_runs_inside_the_agent(on_agent: Agent, api):
    on_agent.fake.script(ToolCalls([ToolCall("get_weather", '{"city": "Paris"}', id="own_1")]),
                         Text("Sunny in Paris."))
    thread_id, events = run(api, "Weather in Paris?")
    assert text_of(events) == "Sunny in Paris."
    assert "TOOL_CALL_START" not in types(events)  # the agent's business, not the app's
    after_tool = on_agent.fake.requests[-1].body["messages"]
    assert {"role": "tool", "content": "Sunny and 21 degrees in Paris"}.items() <= after_tool[-1].items()


def test_a_client_tool_pauses_the_run_and_its_result_goes_back_to_the_agent(on_agent: Agent, api):
    on_agent.fake.script(ToolCalls([ToolCall("get_location", "{}", id="loc_1")]), Text("You are in Lyon."))
    thread_id, events = run(api, "Where am I?", tools=[LOCATION_TOOL])
    (paused,) = [e for e in events if e.get("name") == "tambo.run.awaiting_input"]
    assert paused["value"]["pendingToolCalls"] == [{"toolCallId": "loc_1", "toolName": "get_location",
                                                    "arguments": "{}"}]
    offered = [t["function"]["name"] for t in on_agent.fake.requests[0].body["tools"]]
    assert "get_location" in offered and "get_weather" in offered

    _, events = run(api, thread_id=thread_id, tools=[LOCATION_TOOL], previousRunId=last_run_id(api, thread_id), content=[
        {"type": "tool_result", "toolUseId": "loc_1", "content": [{"type": "text", "text": "Lyon, France"}]}])
    assert text_of(events) == "You are in Lyon."
    messages = on_agent.fake.requests[-1].body["messages"]
    calls = [m for m in messages if m["role"] == "assistant" and m.get("tool_calls")]
    assert calls[-1]["tool_calls"][0]["id"] == "loc_1"
    assert messages[-1]["role"] == "tool" and messages[-1]["tool_call_id"] == "loc_1"
    assert "Lyon, France" in json.dumps(messages[-1]["content"])


def test_a_component_streams_when_the_agent_calls_its_tool(on_agent: Agent, api):
    on_agent.fake.script(ToolCalls([ToolCall("show_component_WeatherCard", ['{"city": ', '"Paris"}'], id="card_1")]),
                         Text("Here is the card."))
    thread_id, events = run(api, "Show me a weather card", availableComponents=[CARD])
    names = types(events)
    assert "tambo.component.start" in names and "tambo.component.end" in names, names
    assert text_of(events) == "Here is the card."
    block = api.block(thread_id, "component", name="WeatherCard")
    assert block["props"] == {"city": "Paris"}


def start_a_long_answer(on_agent: Agent, api):
    """A run whose agent's model writes a long answer (30 s), read up to its first text; returns the
    response, the thread's and run's ids, the rest of the events and the agent's counts before."""
    before = on_agent.server.counts()
    on_agent.fake.script(Text(["Thinking"] + ["."] * 300, delay=0.1))
    response = api.post("/v1/threads/runs", {"userKey": "alice", "message": {
        "role": "user", "content": [{"type": "text", "text": "Take your time"}]}}, stream=True)
    assert response.status_code == 200, response.text
    thread_id, events = response.headers["X-Thread-Id"], iter_events(response)
    run_id = next(e for e in events if e["type"] == "RUN_STARTED")["runId"]
    assert next(e for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")["delta"].startswith("Thinking")
    return response, thread_id, run_id, events, before


def assert_the_agent_was_left(on_agent: Agent, before: dict[str, int]) -> None:
    """The agent saw its request dropped, counted at its side (what it does then is its own business:
    ag-ui-langgraph lets its model's call run on)."""
    counts = on_agent.server.wait_counts(lambda c: c["disconnected"] > before["disconnected"])
    assert counts["disconnected"] == before["disconnected"] + 1, (before, counts)
    assert counts["started"] == before["started"] + 1 and counts["answered"] == before["answered"], (before, counts)


def test_a_cancel_ends_the_agents_run_frees_the_thread_and_drops_the_request_to_the_agent(on_agent: Agent, api):
    response, thread_id, run_id, events, before = start_a_long_answer(on_agent, api)
    cancelled = api.delete(f"/v1/threads/{thread_id}/runs/{run_id}")
    assert cancelled.status_code == 200, cancelled.text
    rest = list(events)
    assert rest[-1]["type"] == "RUN_ERROR" and rest[-1]["code"] == "CANCELLED", rest[-1:]
    thread = api.thread(thread_id)
    assert thread["runStatus"] == "idle" and thread["lastRunCancelled"] is True
    (answer,) = [m for m in thread["messages"] if m["role"] == "assistant"]
    assert answer["isCancelled"] is True and answer["content"][0]["text"].startswith("Thinking")
    assert_the_agent_was_left(on_agent, before)


def test_a_client_that_goes_away_drops_the_request_to_the_agent(on_agent: Agent, api):
    response, thread_id, _, _, before = start_a_long_answer(on_agent, api)
    response.close()
    assert_the_agent_was_left(on_agent, before)
    wait_for_idle_threads()
    thread = api.thread(thread_id)
    assert thread["runStatus"] == "idle" and thread["lastRunCancelled"] is True


def test_an_ag_ui_client_talks_to_the_agent_through_this_server_with_its_state(on_agent: Agent, api):
    on_agent.fake.script(ToolCalls([ToolCall("get_location", "{}", id="loc_9")]))
    response = api.post("/v1/agui", {
        "threadId": "client-thread-1", "runId": "client-run-1", "state": {"units": "metric"}, "context": [],
        "messages": [{"id": "m1", "role": "user", "content": "Where am I?"}],
        "tools": [{"name": "get_location", "description": "The user's location.",
                   "parameters": {"type": "object", "properties": {}}}],
        "forwardedProps": {"userKey": "alice"}}, stream=True)
    assert response.status_code == 200, response.text
    events = read_events(response)
    assert [e["type"] for e in events][:2] == ["RUN_STARTED", "STATE_SNAPSHOT"]
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["threadId"] == "client-thread-1"
    starts = [e for e in events if e["type"] == "TOOL_CALL_START"]
    assert [(e["toolCallId"], e["toolCallName"]) for e in starts] == [("loc_9", "get_location")]
    assert not any(e["type"] == "CUSTOM" for e in events)  # plain AG-UI: nothing Tambo-specific


@pytest.mark.parametrize("agent", ["langgraph"], indirect=True)  # the graph's state counts its model calls
def test_the_state_the_agent_reports_is_the_threads_and_is_sent_back_on_the_next_run(on_agent: Agent, api):
    from threads.models import Thread

    on_agent.fake.script(Text("First answer."), Text("Second answer."))
    thread_id, events = run(api, "first question")
    assert [e["snapshot"] for e in events if e["type"] == "STATE_SNAPSHOT"] == [{"model_calls": 1}]
    assert Thread.objects.get(id=thread_id).agui_state == {"model_calls": 1}

    # A new AG-UI thread of the agent's own per call (docs/models.md#agents): it counts from what it is sent.
    _, events = run(api, "second question", thread_id=thread_id, previousRunId=last_run_id(api, thread_id))
    assert [e["snapshot"] for e in events if e["type"] == "STATE_SNAPSHOT"] == [{"model_calls": 2}]
    assert Thread.objects.get(id=thread_id).agui_state == {"model_calls": 2}



@pytest.mark.parametrize("agent", ["langgraph"], indirect=True)
def test_an_ag_ui_client_sees_the_agents_state_now_and_at_its_next_run(on_agent: Agent, api):
    def agui_run(run_id: str, state: dict, messages: list[dict]) -> list[dict]:
        response = api.post("/v1/agui", {
            "threadId": "client-thread-state", "runId": run_id, "state": state, "context": [], "tools": [],
            "messages": messages, "forwardedProps": {"userKey": "alice"}}, stream=True)
        assert response.status_code == 200, response.text
        return read_events(response)

    on_agent.fake.script(Text("First answer."), Text("Second answer."))
    first = [{"id": "m1", "role": "user", "content": "first question"}]
    events = agui_run("client-run-1", {"model_calls": 5}, first)
    # The client's state at the start, then the agent's as it reported it.
    assert [e["snapshot"] for e in events if e["type"] == "STATE_SNAPSHOT"] == [{"model_calls": 5}, {"model_calls": 6}]
    answer = {"id": "a1", "role": "assistant", "content": "First answer."}
    # A client that kept no state (a reloaded page sends `{}`) is given the thread's, the agent's last.
    events = agui_run("client-run-2", {}, [*first, answer, {"id": "m2", "role": "user", "content": "again"}])
    assert [e["snapshot"] for e in events if e["type"] == "STATE_SNAPSHOT"] == [{"model_calls": 6}, {"model_calls": 7}]
