"""Tool-call limits over real HTTP (docs/protocol.md#the-event-stream): a request tool's `maxCalls`, the project's total per
user turn, and the cap on identical calls. A refused call gets an isError result telling the model to
answer without more calls, and the run goes on; the model here is the scripted fake behind the
`openai` provider, so every refusal can be read in the model's next request.
"""
from __future__ import annotations

import pytest

from tests.support.fake_openai import Text, ToolCall, ToolCalls
from tests.support.run_requests import enable_tools, last_run_id, run, text_of
from tests.support.sse import types

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT_NOTE = "Answer the user now without calling more tools."
PICK = {"name": "pick", "description": "Pick a number (runs in the client).",
        "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}}


def results(events: list[dict]) -> dict[str, str]:
    return {e["toolCallId"]: e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"}




def test_a_client_tool_called_more_than_its_max_calls_gets_an_error_result(fake, oapi, project):
    before = len(fake.requests)
    fake.script(
        ToolCalls([ToolCall("pick", '{"n": 1}', id="call_a")]),
        ToolCalls([ToolCall("pick", '{"n": 2}', id="call_b")]),
        Text("I picked once."),
    )
    tools = [{**PICK, "maxCalls": 1}]
    thread_id, events = run(oapi, "pick twice", tools=tools)
    assert types(events)[-2:] == ["tambo.run.awaiting_input", "RUN_FINISHED"]
    _, events = run(oapi, thread_id=thread_id, tools=tools, previousRunId=last_run_id(oapi, thread_id),
                    content=[{"type": "tool_result", "toolUseId": "call_a", "content": [{"type": "text", "text": "1"}]}])
    names = types(events)
    assert "tambo.run.awaiting_input" not in names and names[-1] == "RUN_FINISHED", names
    refusal = results(events)["call_b"]
    assert refusal == f"Error: Tool call limit reached: pick may be called at most 1 times. {LIMIT_NOTE}"
    assert fake.requests[before + 2].body["messages"][-1] == {"role": "tool", "tool_call_id": "call_b",
                                                               "content": refusal}
    assert oapi.block(thread_id, "tool_result", toolUseId="call_b")["isError"] is True
    thread = oapi.get(f"/v1/threads/{thread_id}").json()
    assert thread["runStatus"] == "idle" and "pendingToolCallIds" not in thread


def test_max_calls_also_holds_within_one_step_and_only_the_allowed_call_waits_for_the_client(fake, oapi, project):
    fake.script(ToolCalls([ToolCall("pick", '{"n": 1}', id="call_1"), ToolCall("pick", '{"n": 2}', id="call_2")]))
    thread_id, events = run(oapi, "pick", tools=[{**PICK, "maxCalls": 1}])
    awaiting = next(e for e in events if e.get("name") == "tambo.run.awaiting_input")
    assert [c["toolCallId"] for c in awaiting["value"]["pendingToolCalls"]] == ["call_1"]
    assert results(events)["call_2"].startswith("Error: Tool call limit reached: pick may be called at most 1")
    assert oapi.get(f"/v1/threads/{thread_id}").json()["pendingToolCallIds"] == ["call_1"]
    assert oapi.block(thread_id, "tool_result", toolUseId="call_2")["isError"] is True


def test_the_fourth_identical_call_is_refused_and_the_model_is_told_to_answer(fake, oapi, project):
    enable_tools(project, "calculate")
    before = len(fake.requests)
    same = '{"expression": "1+1"}'
    fake.script(*[ToolCalls([ToolCall("calculate", same, id=f"call_{i}")]) for i in range(4)], Text("It is 2."))
    thread_id, events = run(oapi, "what is 1+1, really?")
    assert types(events)[-1] == "RUN_FINISHED"
    got = results(events)
    assert [got[f"call_{i}"] for i in range(3)] == ["2", "2", "2"]
    assert got["call_3"] == ("Error: Tool call limit reached: calculate was already called 3 times with these "
                             f"same arguments. {LIMIT_NOTE}")
    assert fake.requests[before + 4].body["messages"][-1]["content"] == got["call_3"]
    assert oapi.block(thread_id, "tool_result", toolUseId="call_3")["isError"] is True
    assert "isError" not in oapi.block(thread_id, "tool_result", toolUseId="call_2")
    assert text_of(events) == "It is 2."


def test_identical_calls_are_capped_but_different_arguments_are_not(fake, oapi, project):
    enable_tools(project, "calculate")
    same = '{"expression": "1+1"}'
    fake.script(*[ToolCalls([ToolCall("calculate", same, id=f"call_{i}")]) for i in range(3)],
                ToolCalls([ToolCall("calculate", '{"expression": "2+2"}', id="call_other")]), Text("ok"))
    _, events = run(oapi, "go")
    assert results(events)["call_other"] == "4"


def test_the_project_total_per_user_turn_is_enforced_and_a_new_user_message_starts_a_new_turn(fake, oapi, project):
    project.max_tool_calls_per_turn = 2
    project.save()
    enable_tools(project, "calculate")
    before = len(fake.requests)
    fake.script(
        ToolCalls([ToolCall("calculate", '{"expression": "1+1"}', id="call_1")]),
        ToolCalls([ToolCall("calculate", '{"expression": "2+2"}', id="call_2")]),
        ToolCalls([ToolCall("calculate", '{"expression": "3+3"}', id="call_3")]),
        Text("Enough."),
    )
    thread_id, events = run(oapi, "count")
    got = results(events)
    assert (got["call_1"], got["call_2"]) == ("2", "4")
    assert got["call_3"] == f"Error: Tool call limit reached: at most 2 tool calls per user message. {LIMIT_NOTE}"
    assert fake.requests[before + 3].body["messages"][-1]["content"] == got["call_3"]
    assert types(events)[-1] == "RUN_FINISHED"
    # The next user message is a new turn: tools may be called again.
    fake.script(ToolCalls([ToolCall("calculate", '{"expression": "5+5"}', id="call_4")]), Text("10"))
    _, events = run(oapi, "and 5+5?", thread_id=thread_id, previousRunId=last_run_id(oapi, thread_id))
    assert results(events) == {"call_4": "10"}


def test_the_turn_total_counts_calls_made_before_a_continuation(fake, oapi, project):
    project.max_tool_calls_per_turn = 2
    project.save()
    enable_tools(project, "calculate")
    fake.script(
        ToolCalls([ToolCall("calculate", '{"expression": "1+1"}', id="call_s"),
                   ToolCall("pick", '{"n": 1}', id="call_c")]),
        ToolCalls([ToolCall("calculate", '{"expression": "2+2"}', id="call_after")]),
        Text("Done."),
    )
    thread_id, events = run(oapi, "go", tools=[PICK])
    assert results(events) == {"call_s": "2"}
    _, events = run(oapi, thread_id=thread_id, tools=[PICK], previousRunId=last_run_id(oapi, thread_id),
                    content=[{"type": "tool_result", "toolUseId": "call_c", "content": [{"type": "text", "text": "1"}]}])
    assert results(events)["call_after"].startswith("Error: Tool call limit reached: at most 2 tool calls per user")
    assert types(events)[-1] == "RUN_FINISHED"
