"""Built-in server tools in runs, over real HTTP (docs/protocol.md#the-event-stream, server tools).

Through the offline model (the user's text names the tool and gives the arguments) and through the
`openai` provider against the scripted fake, with argument fragments split mid-token and several
calls in one step.
"""
from __future__ import annotations

import json
import re

import pytest

from tests.support.fake_openai import Text, ToolCall, ToolCalls
from tests.support.run_requests import enable_tools, run, stored_results, text_of, tool_results
from tests.support.sse import types

pytestmark = pytest.mark.django_db(transaction=True)


# --- Offline model -----------------------------------------------------------------------------------

@pytest.mark.both_dbs
def test_the_calculate_tool_runs_inside_the_run_and_the_model_reads_its_result(api, project):
    enable_tools(project, "calculate")
    thread_id, events = run(api, 'Please calculate {"expression": "2*(3+4)"}')
    names = types(events)
    assert names[0] == "RUN_STARTED" and names[-1] == "RUN_FINISHED", names
    call = next(e for e in events if e["type"] == "TOOL_CALL_START")
    assert call["toolCallName"] == "calculate"
    assert json.loads("".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS")) == {
        "expression": "2*(3+4)"}
    [result] = tool_results(events)
    assert (result["toolCallId"], result["content"], result["role"]) == (call["toolCallId"], "14", "tool")
    assert names.index("TOOL_CALL_END") < names.index("TOOL_CALL_RESULT") < names.index("TEXT_MESSAGE_START")
    assert text_of(events) == "Tool calculate returned: 14"
    assert stored_results(api, thread_id) == [
        {"type": "tool_result", "toolUseId": call["toolCallId"], "content": [{"type": "text", "text": "14"}]}]
    thread = api.get(f"/v1/threads/{thread_id}").json()
    assert thread["runStatus"] == "idle" and "pendingToolCallIds" not in thread
    # The model's call is stored too, before its result.
    kinds = [[b["type"] for b in m["content"]] for m in thread["messages"]]
    assert kinds == [["text"], ["tool_use"], ["tool_result"], ["text"]]
    assert thread["messages"][1]["content"][0]["input"] == {"expression": "2*(3+4)"}


def test_a_built_in_tool_is_offered_only_to_projects_that_enabled_it(api, project):
    from tools.models import ProjectTool

    _, events = run(api, "calculate 2+2")
    assert "I was offered no tools." in text_of(events)
    assert tool_results(events) == []
    ProjectTool.objects.create(project=project, name="current_time", enabled=False)
    enable_tools(project, "calculate")
    _, events = run(api, "hello")
    assert "I was offered these tools: calculate;" in text_of(events)


def test_arguments_that_fail_the_tool_schema_give_an_error_result_the_model_reads(api, project):
    enable_tools(project, "calculate")
    thread_id, events = run(api, 'calculate {"expression": 5}')
    assert types(events)[-1] == "RUN_FINISHED"
    [result] = tool_results(events)
    assert result["content"].startswith("Error: Invalid arguments for calculate: expression: ")
    [stored] = stored_results(api, thread_id)
    assert stored["isError"] is True
    assert text_of(events) == f"Tool calculate returned: {result['content']}"


def test_a_tool_that_raises_gives_an_error_result_and_the_run_finishes(api, project):
    enable_tools(project, "calculate", "current_time")
    thread_id, events = run(api, 'calculate {"expression": "1/0"}')
    assert types(events)[-1] == "RUN_FINISHED"
    assert text_of(events) == "Tool calculate returned: Error: Tool calculate failed: division by zero"
    _, events = run(api, 'current_time {"timezone": "Mars/Olympus"}')
    assert text_of(events) == ("Tool current_time returned: Error: Tool current_time failed: "
                               "Unknown time zone: Mars/Olympus")
    assert api.get(f"/v1/threads/{thread_id}").json()["runStatus"] == "idle"


def test_the_current_time_tool_answers_in_the_asked_time_zone(api, project):
    enable_tools(project, "current_time")
    _, events = run(api, 'What time is it? current_time {"timezone": "Asia/Kolkata"}')
    [result] = tool_results(events)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+05:30", result["content"]), result["content"]


# --- The openai provider against the scripted fake ------------------------------------------------------

def test_two_server_tools_in_one_step_with_arguments_split_mid_token(fake, oapi, project):
    enable_tools(project, "calculate", "current_time")
    before = len(fake.requests)
    fake.script(
        ToolCalls([ToolCall("calculate", ['{"expr', 'ession": "2*', '(3+', '4)"}'], id="call_calc"),
                   ToolCall("current_time", ['{"time', 'zone": "Asia/Kol', 'kata"}'], id="call_time")],
                  interleave=True),
        Text(["Both ", "tools answered."]),
    )
    thread_id, events = run(oapi, "What is 2*(3+4), and the time in India?")
    names = types(events)
    assert names[-1] == "RUN_FINISHED", names
    args = {}
    for event in events:
        if event["type"] == "TOOL_CALL_ARGS":
            args[event["toolCallId"]] = args.get(event["toolCallId"], "") + event["delta"]
    assert json.loads(args["call_calc"]) == {"expression": "2*(3+4)"}
    assert json.loads(args["call_time"]) == {"timezone": "Asia/Kolkata"}
    by_id = {r["toolCallId"]: r["content"] for r in tool_results(events)}
    assert by_id["call_calc"] == "14"
    assert by_id["call_time"].endswith("+05:30")
    assert text_of(events) == "Both tools answered."
    assert names.index("TOOL_CALL_RESULT") < names.index("TEXT_MESSAGE_START")
    # The model's second request carries its calls and both results.
    second = fake.requests[before + 1].body["messages"]
    assert second[-3]["role"] == "assistant"
    assert [c["id"] for c in second[-3]["tool_calls"]] == ["call_calc", "call_time"]
    assert json.loads(second[-3]["tool_calls"][0]["function"]["arguments"]) == {"expression": "2*(3+4)"}
    assert [(m["role"], m["tool_call_id"]) for m in second[-2:]] == [("tool", "call_calc"), ("tool", "call_time")]
    assert second[-2]["content"] == "14"
    assert {r["toolUseId"] for r in stored_results(oapi, thread_id)} == {"call_calc", "call_time"}
    # Both calls are stored in one assistant message, before their results.
    messages = oapi.get(f"/v1/threads/{thread_id}").json()["messages"]
    assert [b["type"] for b in messages[1]["content"]] == ["tool_use", "tool_use"]


def test_the_model_reads_a_schema_error_and_can_correct_itself(fake, oapi, project):
    enable_tools(project, "calculate")
    before = len(fake.requests)
    fake.script(
        ToolCalls([ToolCall("calculate", ['{"expression": ', '42}'], id="call_bad")]),
        ToolCalls([ToolCall("calculate", ['{"expression": "6*7"}'], id="call_good")]),
        Text("It is 42."),
    )
    thread_id, events = run(oapi, "six times seven?")
    assert types(events)[-1] == "RUN_FINISHED"
    assert [(r["toolCallId"], r["content"].startswith("Error: Invalid arguments for calculate"))
            for r in tool_results(events)] == [("call_bad", True), ("call_good", False)]
    second = fake.requests[before + 1].body["messages"]
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "call_bad"
    assert second[-1]["content"].startswith("Error: Invalid arguments for calculate: expression: ")
    assert fake.requests[before + 2].body["messages"][-1]["content"] == "42"
    assert [r.get("isError", False) for r in stored_results(oapi, thread_id)] == [True, False]
    assert text_of(events) == "It is 42."


def test_a_tool_name_the_model_invents_gets_an_error_result_and_the_run_goes_on(fake, oapi, project):
    before = len(fake.requests)
    fake.script(ToolCalls([ToolCall("launch_rockets", '{"count": 3}', id="call_x")]), Text("Sorry."))
    thread_id, events = run(oapi, "launch")
    assert types(events)[-1] == "RUN_FINISHED"
    [result] = tool_results(events)
    assert result["toolCallId"] == "call_x" and result["content"].startswith("Error: There is no tool named")
    assert fake.requests[before + 1].body["messages"][-1]["content"] == result["content"]
    [stored] = stored_results(oapi, thread_id)
    assert stored["isError"] is True
    assert oapi.get(f"/v1/threads/{thread_id}").json()["runStatus"] == "idle"


def test_the_model_is_offered_the_built_in_tools_with_their_schemas(fake, oapi, project):
    enable_tools(project, "calculate")
    before = len(fake.requests)
    fake.script(Text("ok"))
    run(oapi, "hi", tools=[{"name": "client_side", "description": "A client tool.",
                              "inputSchema": {"type": "object", "properties": {}}}])
    offered = {t["function"]["name"]: t["function"] for t in fake.requests[before].body["tools"]}
    assert set(offered) == {"calculate", "client_side"}
    assert offered["calculate"]["parameters"]["properties"]["expression"]["type"] == "string"
    assert offered["calculate"]["parameters"]["required"] == ["expression"]


def test_a_client_tool_with_a_built_in_tools_name_is_offered_once_and_runs_in_the_client(fake, oapi, project):
    enable_tools(project, "calculate")
    before = len(fake.requests)
    fake.script(ToolCalls([ToolCall("calculate", '{"expression": "1+1"}', id="call_c")]))
    client_calculate = {"name": "calculate", "description": "The app's own calculator.",
                        "inputSchema": {"type": "object", "properties": {"expression": {"type": "string"}}}}
    _, events = run(oapi, "1+1?", tools=[client_calculate])
    names = [t["function"]["name"] for t in fake.requests[before].body["tools"]]
    assert names == ["calculate"]  # a model provider refuses a request that names a tool twice
    assert fake.requests[before].body["tools"][0]["function"]["description"] == "The app's own calculator."
    assert tool_results(events) == []
    awaiting = next(e for e in events if e.get("name") == "tambo.run.awaiting_input")
    assert [c["toolCallId"] for c in awaiting["value"]["pendingToolCalls"]] == ["call_c"]
