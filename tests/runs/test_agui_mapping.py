"""The AG-UI edge without a server: RunAgentInput as `ag_ui.core` reads it, and how a turn is read from it."""
from __future__ import annotations

import asyncio

import pytest
from ag_ui.core import (
    CustomEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageStartEvent,
    ToolCallResultEvent,
)

from core.problems import Problem
from core.validation import parse_body
from runs.agui.protocol import agui_events, client_tools, model_context, plan_turn
from runs.stream.sse import encode_event

EVERY_FIELD = {
    "threadId": "conv-1",
    "runId": "run-client-1",
    "parentRunId": "run-client-0",
    "protocolVersion": "1.0",
    "state": {"cart": [1, 2], "filter": None},
    "messages": [
        {"id": "d1", "role": "developer", "content": "Be brief."},
        {"id": "s1", "role": "system", "content": "You help with orders."},
        {"id": "u1", "role": "user", "content": "hello", "name": "Ann", "metadata": {"source": "web"}},
        {"id": "a1", "role": "assistant", "content": "Calling a tool.", "toolCalls": [
            {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\": 1}"}}]},
        {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "found", "error": None},
        {"id": "u2", "role": "user", "content": [
            {"type": "text", "text": "and this picture"},
            {"type": "image", "source": {"type": "url", "value": "https://example.com/a.png", "mimeType": "image/png"}},
            {"type": "document", "source": {"type": "data", "value": "aGVsbG8=", "mimeType": "text/plain"}}]},
        {"id": "r1", "role": "reasoning", "content": "thinking"},
        {"id": "x1", "role": "activity", "activityType": "progress", "content": {"done": 1}},
    ],
    "tools": [{"name": "lookup", "description": "Finds things.",
               "parameters": {"type": "object", "properties": {"q": {"type": "integer"}}}}],
    "context": [{"description": "Page", "value": "/orders"}],
    "forwardedProps": {"userKey": "alice", "theme": "dark"},
    "resume": [{"interruptId": "i1", "status": "resolved", "payload": {"ok": True}}],
}


def test_a_request_with_every_field_round_trips_through_ag_uis_models():
    parsed = parse_body(RunAgentInput, EVERY_FIELD)

    assert parsed.model_dump(mode="json", by_alias=True, exclude_none=True) == _without_nulls(EVERY_FIELD)
    assert [type(m).__name__ for m in parsed.messages] == [
        "DeveloperMessage", "SystemMessage", "UserMessage", "AssistantMessage", "ToolMessage", "UserMessage",
        "ReasoningMessage", "ActivityMessage"]


def _without_nulls(value):
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None or k == "filter"}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def test_a_new_thread_takes_every_message_and_skips_the_clients_own_display_material():
    turn = plan_turn(_input(_plain_history()), known_ids=set(), answered_call_ids=set())

    assert [(m.role, m.external_id) for m in turn.messages] == [
        ("system", "d1"), ("system", "s1"), ("user", "u1"), ("assistant", "a2"), ("user", "u2")]
    assert turn.messages[2].metadata == {"source": "web"}
    assert turn.messages[4].content == [
        {"type": "text", "text": "and this picture"},
        {"type": "resource", "resource": {"name": "image part", "uri": "https://example.com/a.png",
                                          "mimeType": "image/png"}},
        {"type": "resource", "resource": {"name": "document part", "blob": "aGVsbG8=", "mimeType": "text/plain"}}]


def test_stored_ids_and_answered_calls_are_history():
    turn = plan_turn(_input(EVERY_FIELD["messages"]), known_ids={"d1", "s1", "u1", "a1"}, answered_call_ids={"c1"})

    assert [m.external_id for m in turn.messages] == ["u2"] and turn.results == {}


def test_a_tool_message_for_an_open_call_is_a_result_and_the_last_one_wins():
    messages = EVERY_FIELD["messages"][:5] + [
        {"id": "t2", "role": "tool", "toolCallId": "c1", "content": "failed", "error": "timeout"}]

    turn = plan_turn(_input(messages), known_ids={"d1", "s1", "u1", "a1"}, answered_call_ids=set())

    assert turn.messages == [] and not turn.empty
    result = turn.results["c1"]
    assert result.external_id == "t2"
    assert result.content == [{"type": "tool_result", "toolUseId": "c1", "isError": True,
                               "content": [{"type": "text", "text": "failed"}]}]


def test_an_assistant_tool_call_the_server_does_not_store_is_refused():
    with pytest.raises(Problem) as refused:
        plan_turn(_input(EVERY_FIELD["messages"]), known_ids=set(), answered_call_ids=set())

    assert refused.value.extra["field"] == "messages[3].toolCalls"


def test_tools_become_client_tools_and_a_bad_name_is_named():
    assert [t.wire() for t in client_tools(_input([], tools=EVERY_FIELD["tools"]))] == [
        {"name": "lookup", "description": "Finds things.",
         "inputSchema": {"type": "object", "properties": {"q": {"type": "integer"}}}}]
    with pytest.raises(Problem) as refused:
        client_tools(_input([], tools=[{"name": "", "description": ""}]))
    assert refused.value.extra["field"] == "tools[0].name"


def test_context_and_a_non_empty_state_are_the_models_context():
    assert model_context(_input([], context=EVERY_FIELD["context"]), {"cart": 1}) == {
        "context": [{"description": "Page", "value": "/orders"}], "state": {"cart": 1}}
    assert model_context(_input([]), {}) is None


def test_loop_events_come_out_as_plain_ag_ui_with_the_clients_ids():
    loop_events = [
        RunStartedEvent(thread_id="thr_server", run_id="run_server"),
        TextMessageStartEvent(message_id="msg_1", role="assistant"),
        ToolCallResultEvent(message_id="msg_1", tool_call_id="call_1", content="42", role="tool"),
        CustomEvent(name="tambo.run.awaiting_input", value={"pendingToolCalls": []}),
        RunFinishedEvent(thread_id="thr_server", run_id="run_server",
                         outcome=RunFinishedSuccessOutcome(pending_tool_call_ids=["call_2"])),
        RunErrorEvent(message="boom", code="LLM_SERVER_ERROR", category="server_error", isRetryable=True),
    ]

    async def source():
        for event in loop_events:
            yield event

    async def collect():
        return [e async for e in agui_events(source(), thread_id="conv-1", run_id="r-1", state={"a": 1})]

    out = [encode_event(e) for e in asyncio.run(collect())]

    assert [o.split(b'"type":"')[1].split(b'"')[0] for o in out] == [
        b"RUN_STARTED", b"STATE_SNAPSHOT", b"TEXT_MESSAGE_START", b"TOOL_CALL_RESULT", b"RUN_FINISHED", b"RUN_ERROR"]
    assert b'"threadId":"conv-1","runId":"r-1"' in out[0] and b'"snapshot":{"a":1}' in out[1]
    assert b'"messageId":"call_1.result"' in out[3]
    assert b'"outcome":{"type":"success","pendingToolCallIds":["call_2"]}' in out[4]
    assert b"category" not in out[5] and b"isRetryable" not in out[5]


def _plain_history() -> list[dict]:
    history = [dict(m) for m in EVERY_FIELD["messages"] if m["id"] not in ("a1", "t1")]
    history.insert(3, {"id": "a2", "role": "assistant", "content": "Earlier answer."})
    return history


def _input(messages: list[dict], **extra) -> RunAgentInput:
    return RunAgentInput.model_validate({"threadId": "t", "runId": "r", "messages": messages, **extra})
