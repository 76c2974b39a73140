"""An MCP tool that asks the user for input pauses the run (docs/protocol.md#the-event-stream,
docs/tools.md#input-requests): the real test server (tests/support/mcp_elicit_server.py) over streamable
HTTP on loopback, in both protocol eras, and the offline model, which answers "Tool <name> returned:
<text>" once the tool's result reaches it.
"""
from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.mcp_fixtures import running_elicit_mcp_server
from tests.support.run_requests import last_run_id, run, stored_results, text_of, tool_results
from tests.support.sse import types

pytestmark = pytest.mark.django_db(transaction=True)

SEATS = "How many seats for Tosca?"


@pytest.fixture(scope="module")
def call_log() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder)


@pytest.fixture(scope="module", params=["2026-07-28", "session"])
def era_server(request, call_log) -> Iterator[tuple[str, str, Path]]:
    """(era, URL, call log) of a server of each era."""
    log = call_log / f"{request.param}.jsonl"
    with running_elicit_mcp_server(legacy=request.param == "session", call_log=str(log)) as url:
        yield request.param, url, log


def calls_of(log: Path, tool: str) -> list[dict]:
    return [entry for line in log.read_text().splitlines() if (entry := json.loads(line))["tool"] == tool] \
        if log.exists() else []


def add_server(project, url: str, name: str = "demo"):
    from tools.models import McpServer

    return McpServer.objects.create(project=project, name=name, transport="http", url=url)


def awaiting(events: list[dict]) -> dict:
    [custom] = [e for e in events if e["type"] == "CUSTOM" and e["name"] == "tambo.run.awaiting_input"]
    return custom["value"]


def answer(thread_id: str, api, input_call_id: str, value, *, is_error: bool = False, **run_extra) -> list[dict]:
    block = {"type": "tool_result", "toolUseId": input_call_id,
             "content": [{"type": "text", "text": json.dumps(value)}], **({"isError": True} if is_error else {})}
    _, events = run(api, content=[block], thread_id=thread_id, previousRunId=last_run_id(api, thread_id), **run_extra)
    return events


def ask_to_book(api, tool: str = "demo__book") -> tuple[str, list[dict], dict]:
    thread_id, events = run(api, f'Please use {tool} {{"show": "Tosca"}}')
    return thread_id, events, awaiting(events)


# The pause and the continuation store through the lock's statements: on both databases.
@pytest.mark.both_dbs
def test_a_tool_that_asks_pauses_the_run_with_the_request_and_its_schema(api, project, era_server):
    era, url, log = era_server
    add_server(project, url)
    before = len(calls_of(log, "book"))
    thread_id, events, value = ask_to_book(api)

    assert types(events)[-1] == "RUN_FINISHED" and "RUN_ERROR" not in types(events)
    assert tool_results(events) == []  # the tool has no result yet
    model_call = next(e for e in events if e["type"] == "TOOL_CALL_START" and e["toolCallName"] == "demo__book")
    [request] = value["inputRequests"]
    assert request["message"] == SEATS and request["mode"] == "form"
    assert request["requestedSchema"]["properties"]["seats"]["type"] == "integer"
    assert request["requestedSchema"]["required"] == ["seats"]
    assert request["serverName"] == "demo" and request["toolName"] == "demo__book"
    assert request["mcpToolCallId"] == model_call["toolCallId"]
    # Asked through a synthetic client tool call, which @tambo-ai/client runs as any client tool.
    input_call_id = request["toolCallId"]
    assert input_call_id != model_call["toolCallId"]
    [pending] = value["pendingToolCalls"]
    assert pending["toolCallId"] == input_call_id and pending["toolName"] == "tambo_mcp_input"
    assert json.loads(pending["arguments"]) == {k: v for k, v in request.items() if k != "toolCallId"}
    synthetic = [e for e in events if e.get("toolCallId") == input_call_id]
    assert [e["type"] for e in synthetic] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
    assert synthetic[0]["toolCallName"] == "tambo_mcp_input"
    assert json.loads(synthetic[1]["delta"])["message"] == SEATS
    assert events[-1]["outcome"] == {"type": "success", "pendingToolCallIds": [input_call_id]}
    thread = api.get(f"/v1/threads/{thread_id}").json()
    assert thread["runStatus"] == "idle" and thread["pendingToolCallIds"] == [input_call_id]
    assert stored_results(api, thread_id) == []
    # The server was called once, in the era it speaks.
    calls = calls_of(log, "book")[before:]
    assert len(calls) == 1
    assert (calls[0]["era"] == "2026-07-28") == (era == "2026-07-28")


@pytest.mark.both_dbs
def test_the_answer_on_the_continuation_reaches_the_tool_and_its_result_the_model(api, project, era_server):
    era, url, log = era_server
    add_server(project, url)
    thread_id, events, value = ask_to_book(api)
    model_call_id = value["inputRequests"][0]["mcpToolCallId"]
    before = len(calls_of(log, "book"))

    after = answer(thread_id, api, value["pendingToolCalls"][0]["toolCallId"],
                   {"action": "accept", "content": {"seats": 2}})

    assert types(after)[0] == "RUN_STARTED" and types(after)[-1] == "RUN_FINISHED"
    [result] = tool_results(after)
    assert result["toolCallId"] == model_call_id and result["content"] == "Booked 2 seats for Tosca."
    assert text_of(after) == "Tool demo__book returned: Booked 2 seats for Tosca."
    # The call was made once more, with the answer (in the 2026-07-28 era that is two requests: the call
    # asks again, and the SDK's retry carries the answer); the answer itself is no message of the thread.
    assert len(calls_of(log, "book")) == before + (2 if era == "2026-07-28" else 1)
    assert stored_results(api, thread_id) == [{"type": "tool_result", "toolUseId": model_call_id,
                                                "content": [{"type": "text", "text": "Booked 2 seats for Tosca."}]}]
    thread = api.get(f"/v1/threads/{thread_id}").json()
    assert thread["runStatus"] == "idle" and "pendingToolCallIds" not in thread
    assert thread["messages"][-1]["content"] == [{"type": "text",
                                                  "text": "Tool demo__book returned: Booked 2 seats for Tosca."}]


@pytest.mark.parametrize("reply, chose", [({"action": "decline"}, "decline"), ({"action": "cancel"}, "cancel")])
def test_a_declined_or_cancelled_request_is_an_answer_too(api, project, era_server, reply, chose):
    _, url, _ = era_server
    add_server(project, url)
    thread_id, _, value = ask_to_book(api)

    after = answer(thread_id, api, value["pendingToolCalls"][0]["toolCallId"], reply)

    [result] = tool_results(after)
    assert result["content"] == f"Nothing booked for Tosca: the user chose {chose}."
    assert text_of(after) == f"Tool demo__book returned: Nothing booked for Tosca: the user chose {chose}."


def test_an_error_result_from_the_app_cancels_the_request(api, project, era_server):
    _, url, _ = era_server
    add_server(project, url)
    thread_id, _, value = ask_to_book(api)

    after = answer(thread_id, api, value["pendingToolCalls"][0]["toolCallId"], "no form here", is_error=True)

    assert tool_results(after)[0]["content"] == "Nothing booked for Tosca: the user chose cancel."


@pytest.mark.both_dbs
def test_a_tool_that_asks_twice_pauses_twice_and_gets_both_answers(api, project, era_server):
    era, url, log = era_server
    add_server(project, url)
    before = len(calls_of(log, "book_with_note"))
    thread_id, _, first = ask_to_book(api, "demo__book_with_note")
    assert first["inputRequests"][0]["message"] == SEATS

    second_events = answer(thread_id, api, first["pendingToolCalls"][0]["toolCallId"],
                           {"action": "accept", "content": {"seats": 3}})
    second = awaiting(second_events)
    assert tool_results(second_events) == []
    assert second["inputRequests"][0]["message"] == "A note for the booking?"
    assert second["inputRequests"][0]["mcpToolCallId"] == first["inputRequests"][0]["mcpToolCallId"]
    assert second["pendingToolCalls"][0]["toolCallId"] != first["pendingToolCalls"][0]["toolCallId"]

    done = answer(thread_id, api, second["pendingToolCalls"][0]["toolCallId"],
                  {"action": "accept", "content": {"note": "aisle"}})
    assert tool_results(done)[0]["content"] == "Booked 3 seats for Tosca, note: aisle."
    # Asked, asked again, answered; in the 2026-07-28 era each answer given is one more request of the call.
    assert len(calls_of(log, "book_with_note")) == before + (1 + 2 + 3 if era == "2026-07-28" else 3)


def test_a_new_message_instead_of_an_answer_gives_the_tool_call_an_error_result(api, project, era_server):
    _, url, _ = era_server
    add_server(project, url)
    thread_id, _, value = ask_to_book(api)
    model_call_id = value["inputRequests"][0]["mcpToolCallId"]

    _, after = run(api, "Never mind.", thread_id=thread_id, previousRunId=last_run_id(api, thread_id))

    assert types(after)[-1] == "RUN_FINISHED"
    [stored] = stored_results(api, thread_id)
    assert stored["toolUseId"] == model_call_id and stored["isError"] is True


def test_an_answer_for_another_call_is_refused(api, project, era_server):
    _, url, _ = era_server
    add_server(project, url)
    thread_id, _, value = ask_to_book(api)
    block = {"type": "tool_result", "toolUseId": "call_" + uuid.uuid4().hex,
             "content": [{"type": "text", "text": "{}"}]}
    response = api.post(f"/v1/threads/{thread_id}/runs", {
        "userKey": "alice", "message": {"role": "user", "content": [block]},
        "previousRunId": last_run_id(api, thread_id)})
    assert response.status_code == 400 and response.json()["code"] == "INVALID_TOOL_RESULT"
    assert response.json()["missingToolCallIds"] == [value["pendingToolCalls"][0]["toolCallId"]]


def test_the_answering_client_tool_is_never_offered_to_the_model():
    from runs.toolbox import toolbox_build
    from clientsdk import wire

    tools = [wire.ClientTool.model_validate({"name": "tambo_mcp_input", "description": "asks the user"}),
             wire.ClientTool.model_validate({"name": "get_weather", "description": "weather"})]
    toolbox = toolbox_build(client_tools=tools, components=[], enabled=[])
    assert [t.name for t in toolbox.model_tools()] == ["get_weather"]


def agui_input(thread_id: str, messages: list[dict], *, version: str | None = "1.0", **extra) -> dict:
    body = {"threadId": thread_id, "runId": f"r-{uuid.uuid4()}", "messages": messages, "tools": [],
            "context": [], "state": {}, "forwardedProps": {"userKey": "alice"}, **extra}
    if version:
        body["protocolVersion"] = version
    return body


def agui_run(api, body: dict) -> list[dict]:
    from tests.support.sse import read_events

    response = api.post("/v1/agui", body, stream=True)
    assert response.status_code == 200, response.text
    return read_events(response)


@pytest.mark.parametrize("reply, text", [
    ({"status": "resolved", "payload": {"action": "accept", "content": {"seats": 4}}}, "Booked 4 seats for Tosca."),
    ({"status": "cancelled"}, "Nothing booked for Tosca: the user chose cancel."),
])
def test_agui_1_0_gets_an_interrupt_and_answers_it_with_a_resume_entry(api, project, era_server, reply, text):
    _, url, _ = era_server
    add_server(project, url)
    conversation = f"conv-{uuid.uuid4()}"
    ask = {"id": f"u-{uuid.uuid4()}", "role": "user", "content": 'Please use demo__book {"show": "Tosca"}'}
    events = agui_run(api, agui_input(conversation, [ask]))

    assert "CUSTOM" not in types(events)
    outcome = events[-1]["outcome"]
    assert events[-1]["type"] == "RUN_FINISHED" and outcome["type"] == "interrupt"
    [interrupt] = outcome["interrupts"]
    assert interrupt["reason"] == "mcp_input_required" and interrupt["message"] == SEATS
    assert interrupt["responseSchema"]["properties"]["seats"]["type"] == "integer"
    assert interrupt["toolCallId"] == interrupt["id"]
    assert interrupt["metadata"]["serverName"] == "demo" and interrupt["metadata"]["toolName"] == "demo__book"

    after = agui_run(api, agui_input(conversation, [ask], resume=[{"interruptId": interrupt["id"], **reply}]))

    [result] = [e for e in after if e["type"] == "TOOL_CALL_RESULT"]
    assert result["toolCallId"] == interrupt["metadata"]["mcpToolCallId"] and result["content"] == text
    assert text_of(after) == f"Tool demo__book returned: {text}"
    assert after[-1]["type"] == "RUN_FINISHED" and after[-1].get("outcome", {"type": "success"})["type"] == "success"


def test_an_agui_0_0_client_answers_the_synthetic_call_with_a_tool_message(api, project, era_server):
    _, url, _ = era_server
    add_server(project, url)
    conversation = f"conv-{uuid.uuid4()}"
    ask = {"id": f"u-{uuid.uuid4()}", "role": "user", "content": 'Please use demo__book {"show": "Tosca"}'}
    events = agui_run(api, agui_input(conversation, [ask], version=None))

    assert "outcome" not in events[-1]
    [start] = [e for e in events if e["type"] == "TOOL_CALL_START" and e["toolCallName"] == "tambo_mcp_input"]
    arguments = json.loads("".join(e["delta"] for e in events
                                   if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == start["toolCallId"]))
    assert arguments["message"] == SEATS and arguments["requestedSchema"]["required"] == ["seats"]
    reply = {"id": f"t-{uuid.uuid4()}", "role": "tool", "toolCallId": start["toolCallId"],
             "content": json.dumps({"action": "accept", "content": {"seats": 1}})}

    after = agui_run(api, agui_input(conversation, [ask, reply], version=None))

    [result] = [e for e in after if e["type"] == "TOOL_CALL_RESULT"]
    assert result["content"] == "Booked 1 seats for Tosca."


@pytest.mark.parametrize("reply, text", [({"action": "accept", "content": {"seats": 2}}, "Booked 2 seats for Tosca."),
                                         ({"action": "decline"}, "Nothing booked for Tosca: the user chose decline.")])
def test_the_official_client_answers_through_its_registered_tambo_mcp_input_tool(live_server_url, api_key, api, project,
                                                                                 era_server, reply, text):
    from tests.support import node

    _, url, _ = era_server
    add_server(project, url)

    result = node.run_scenario("run.mjs", "mcp_input", live_server_url, api_key,
                               extra_env={"MCP_INPUT_ANSWER": json.dumps(reply)})

    assert result["request"]["serverName"] == "demo" and result["request"]["toolName"] == "demo__book"
    assert result["result"] == text and result["finalText"] == f"Tool demo__book returned: {text}"
    thread = api.get(f"/v1/threads/{result['threadId']}").json()
    assert thread["runStatus"] == "idle" and "pendingToolCallIds" not in thread
    results = [b for m in thread["messages"] for b in m["content"] if b["type"] == "tool_result"]
    # The MCP call's result only: the synthetic call's answer is not a message of the thread.
    assert [r["toolUseId"] for r in results] == [result["mcpToolCallId"]]


def test_a_connection_per_call_answers_in_order_and_asks_past_the_answers(era_server):
    """The path of a server behind OAuth (no kept session: tools/mcp_client.py `call_tool`)."""
    import asyncio

    from tools.mcp_client import McpServerConfig, call_tool

    _, url, _ = era_server
    config = McpServerConfig(name="demo", transport="http", url=url)

    def call(answers):
        return asyncio.run(call_tool(config, "book_with_note", {"show": "Tosca"}, timeout=30, answers=answers))

    first = call([])
    assert first.content == [] and first.input_request.message == SEATS
    second = call([{"action": "accept", "content": {"seats": 5}}])
    assert second.input_request.message == "A note for the booking?"
    assert second.input_request.requested_schema["required"] == ["note"]
    done = call([{"action": "accept", "content": {"seats": 5}}, {"action": "accept", "content": {"note": "front"}}])
    assert done.input_request is None and not done.is_error
    assert done.content == [{"type": "text", "text": "Booked 5 seats for Tosca, note: front."}]


@pytest.mark.parametrize("value, answer", [
    ({"action": "accept", "content": {"seats": 1}}, {"action": "accept", "content": {"seats": 1}}),
    ({"action": "decline", "content": {"seats": 1}}, {"action": "decline"}),
    ({"action": "cancel"}, {"action": "cancel"}),
    ({"seats": 1}, {"action": "accept", "content": {"seats": 1}}),
    ("yes", {"action": "cancel"}),
    (None, {"action": "cancel"}),
])
def test_the_apps_answer_is_read_as_an_elicitation_result(value, answer):
    from runs.mcp_inputs import answer_of

    block = {"type": "tool_result", "toolUseId": "call_x", "content": [{"type": "text", "text": json.dumps(value)}]}
    assert answer_of(block) == answer
    assert answer_of({**block, "isError": True}) == {"action": "cancel"}
    assert answer_of({**block, "content": [{"type": "text", "text": "not json"}]}) == {"action": "cancel"}


def test_the_vendors_model_gets_the_retried_calls_result_and_never_the_answering_tool(fake, oapi, project,
                                                                                      era_server):
    from tests.support.fake_openai import Text, ToolCall, ToolCalls

    _, url, _ = era_server
    add_server(project, url)
    answering = {"name": "tambo_mcp_input", "description": "Asks the user.",
                 "inputSchema": {"type": "object", "properties": {}}}
    before = len(fake.requests)
    fake.script(ToolCalls([ToolCall("demo__book", '{"show": "Tosca"}', id="call_book")]))
    thread_id, events = run(oapi, "Book Tosca.", tools=[answering])
    value = awaiting(events)
    assert value["inputRequests"][0]["mcpToolCallId"] == "call_book"
    assert len(fake.requests) == before + 1  # the pause called the model once, for the tool call

    fake.script(Text("Your seats are booked."))
    after = answer(thread_id, oapi, value["pendingToolCalls"][0]["toolCallId"],
                   {"action": "accept", "content": {"seats": 2}}, tools=[answering])
    assert text_of(after) == "Your seats are booked."
    assert len(fake.requests) == before + 2
    for request in fake.requests[before:]:
        assert "tambo_mcp_input" not in [t["function"]["name"] for t in request.body.get("tools") or []]
    messages = fake.requests[-1].body["messages"]
    assert [c["id"] for c in messages[-2]["tool_calls"]] == ["call_book"]
    assert messages[-1] == {"role": "tool", "tool_call_id": "call_book", "content": "Booked 2 seats for Tosca."}
