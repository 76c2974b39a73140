"""The tool loop's parts without the real server: result encoding, tool calls, the
continuation request on the wire (scripted server), and MCP servers lent as client tools."""
from __future__ import annotations

import pytest
from pydantic import BaseModel

from clientsdk import Client, MaxStepsExceeded, PendingToolCall, ToolResult
from clientsdk._tools import result_content, tool_result_block
from tests.support.mcp_fixtures import running_http_mcp_server, stdio_command

from .scripted_server import Reply, ScriptedServer


@pytest.mark.parametrize("value, blocks", [
    ("hi", [{"type": "text", "text": "hi"}]),
    ({"a": 1}, [{"type": "text", "text": '{"a": 1}'}]),
    ([1, "x"], [{"type": "text", "text": '[1, "x"]'}]),
    (3.5, [{"type": "text", "text": "3.5"}]),
    (None, []),
    ([{"type": "text", "text": "a"}, {"type": "resource", "resource": {"uri": "u://x", "text": "t"}}],
     [{"type": "text", "text": "a"}, {"type": "resource", "resource": {"uri": "u://x", "text": "t"}}]),
])
def test_tool_return_values_become_content_blocks(value, blocks):
    assert result_content(value) == blocks


def test_exceptions_and_explicit_errors_become_is_error_results():
    assert tool_result_block("c1", ValueError("bad")) == {
        "type": "tool_result", "toolUseId": "c1", "isError": True, "content": [{"type": "text", "text": "ValueError: bad"}]}
    assert tool_result_block("c2", ToolResult({"why": "x"}, is_error=True))["isError"] is True
    assert "isError" not in tool_result_block("c3", "fine")


class Point(BaseModel):
    x: int
    y: int = 0


def test_tools_with_a_pydantic_model_get_a_validated_instance_and_its_schema():
    client = Client("http://127.0.0.1:9", "k", "u")
    client.register_tool("plot", lambda p: p.x + p.y, "Plot", Point)
    body = client.build_run_body({"role": "user", "content": [{"type": "text", "text": "hi"}]},
                                 previous_run_id=None)
    assert body["tools"][0]["inputSchema"]["properties"]["x"]["type"] == "integer"
    ok = client.execute_tool_call(PendingToolCall("c1", "plot", '{"x": 2, "y": 3}'))
    assert ok["content"] == [{"type": "text", "text": "5"}] and "isError" not in ok
    bad = client.execute_tool_call(PendingToolCall("c2", "plot", '{"x": "nope"}'))
    assert bad["isError"] and "ValidationError" in bad["content"][0]["text"]
    garbled = client.execute_tool_call(PendingToolCall("c3", "plot", '{"x": '))
    assert garbled["isError"] and "not valid JSON" in garbled["content"][0]["text"]


def _paused(run_id: str, call_id: str) -> Reply:
    return Reply.sse([
        {"type": "RUN_STARTED", "threadId": "thr_1", "runId": run_id},
        {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": "echo_tool", "parentMessageId": "msg_1"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": '{"text": "hi"}'},
        {"type": "TOOL_CALL_END", "toolCallId": call_id},
        {"type": "CUSTOM", "name": "tambo.run.awaiting_input",
         "value": {"pendingToolCalls": [{"toolCallId": call_id, "toolName": "echo_tool", "arguments": '{"text": "hi"}'}]}},
        {"type": "RUN_FINISHED", "threadId": "thr_1", "runId": run_id},
    ], headers={"X-Thread-Id": "thr_1", "X-Run-Id": run_id})


def test_the_continuation_request_answers_the_paused_run_on_the_wire():
    with ScriptedServer() as server:
        server.add("POST", "/v1/threads/runs", _paused("run_1", "call_1"))
        server.add("POST", "/v1/threads/thr_1/runs", Reply.sse([
            {"type": "RUN_STARTED", "threadId": "thr_1", "runId": "run_2"},
            {"type": "RUN_FINISHED", "threadId": "thr_1", "runId": "run_2"}]))
        client = Client(server.url, "k", "alice")
        client.register_tool("echo_tool", lambda text: text.upper(), "Echo")
        client.register_component("Card", "A card", {"type": "object"})
        client.add_context_helper("now", lambda: "t")
        final = client.run("go").result()
        assert final.run_id == "run_2" and final.status == "finished"
        first, cont = server.requests
        assert first.body["thread"] == {"userKey": "alice"} and "previousRunId" not in first.body
        assert cont.path == "/v1/threads/thr_1/runs" and "thread" not in cont.body
        assert cont.body["previousRunId"] == "run_1" and cont.body["userKey"] == "alice"
        assert cont.body["message"] == {"role": "user", "additionalContext": {"now": "t"}, "content": [
            {"type": "tool_result", "toolUseId": "call_1", "content": [{"type": "text", "text": "HI"}]}]}
        assert cont.body["tools"] == [{"name": "echo_tool", "description": "Echo", "inputSchema": {"type": "object", "properties": {}}}]
        assert cont.body["availableComponents"] == [{"name": "Card", "description": "A card", "propsSchema": {"type": "object"}}]


def test_a_stream_that_breaks_off_before_the_run_ends_is_an_error():
    from clientsdk import APIConnectionError

    with ScriptedServer() as server:
        server.add("POST", "/v1/threads/runs", Reply.sse([{"type": "RUN_STARTED", "threadId": "thr_1", "runId": "r"}]))
        with pytest.raises(APIConnectionError):
            Client(server.url, "k", "alice").run("go").result()


def test_max_steps_zero_runs_no_tool_and_sends_nothing_more():
    with ScriptedServer() as server:
        server.add("POST", "/v1/threads/runs", _paused("run_1", "call_1"))
        client = Client(server.url, "k", "alice")
        client.register_tool("echo_tool", lambda text: pytest.fail("must not run"), "Echo")
        with pytest.raises(MaxStepsExceeded):
            client.run("go", max_steps=0).result()
        assert len(server.requests) == 1


def test_a_stdio_mcp_server_lends_its_tools():
    command, args = stdio_command()
    client = Client("http://127.0.0.1:9", "k", "alice")
    try:
        connection = client.connect_mcp_server(command=command, args=list(args), prefix="local_", mode="legacy")
        assert {"local_add", "local_echo", "local_fail"} <= set(client.tools)
        body = client.build_run_body({"role": "user", "content": [{"type": "text", "text": "hi"}]},
                                 previous_run_id=None)
        add = next(t for t in body["tools"] if t["name"] == "local_add")
        assert add["description"] == "Add two integers." and set(add["inputSchema"]["properties"]) == {"a", "b"}
        result = client.execute_tool_call(PendingToolCall("c1", "local_add", '{"a": 2, "b": 40}'))
        assert result["content"] == [{"type": "text", "text": "42"}] and "isError" not in result
        failed = client.execute_tool_call(PendingToolCall("c2", "local_fail", "{}"))
        assert failed["isError"] is True and "always fails" in failed["content"][0]["text"]
        doc = client.execute_tool_call(PendingToolCall("c3", "local_document", "{}"))
        assert doc["content"][0]["type"] == "resource" and doc["content"][0]["resource"]["text"] == "hello from a resource"
    finally:
        client.close()
    with pytest.raises(RuntimeError):
        connection.call_tool("add", {"a": 1, "b": 1})


def test_a_streamable_http_mcp_server_lends_its_tools_with_headers():
    with running_http_mcp_server() as url:
        with Client("http://127.0.0.1:9", "k", "alice") as client:
            client.connect_mcp_server(url=url, headers={"X-Demo": "yes"})
            assert client.execute_tool_call(PendingToolCall("c1", "echo", '{"text": "hey"}'))["content"][0]["text"] == "hey"
            header = client.execute_tool_call(PendingToolCall("c2", "header", '{"name": "X-Demo"}'))
            assert header["content"][0]["text"] == "yes"
