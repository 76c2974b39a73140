"""MCP servers' tools in runs, over real HTTP (docs/protocol.md#the-event-stream, server tools).

The offline model calls a tool when the user's text names it (`<server>__<tool>`) with a JSON object of
arguments, and answers "Tool <name> returned: <text>" once results are in. The MCP server is the real
test server (tests/support/mcp_server.py), over stdio or streamable HTTP.
"""
from __future__ import annotations

import sys
import uuid

import pytest

from tests.support.live import LiveServer, free_port
from tests.support.mcp_fixtures import SERVER_SCRIPT, mcp_http_url, mcp_sse_url  # noqa: F401 - fixture
from tests.support.run_requests import enable_tools, run, stored_results, text_of, tool_results, user_message
from tests.support.sse import types

pytestmark = pytest.mark.django_db(transaction=True)


def stdio_server(project, name: str = "demo"):
    from tools.models import McpServer

    return McpServer.objects.create(project=project, name=name, transport="stdio", command=sys.executable,
                                    args=[str(SERVER_SCRIPT), "stdio"])


def http_server(project, url: str, name: str = "demo", transport: str = "http"):
    from tools.models import McpServer

    return McpServer.objects.create(project=project, name=name, transport=transport, url=url)


def assert_add_round_trip(api):
    thread_id, events = run(api, 'Please use demo__add with {"a": 2, "b": 3}')
    names = types(events)
    assert names[0] == "RUN_STARTED" and names[-1] == "RUN_FINISHED", names
    assert "RUN_ERROR" not in names
    start_event = next(e for e in events if e["type"] == "TOOL_CALL_START")
    assert start_event["toolCallName"] == "demo__add"
    [result] = tool_results(events)
    assert result["toolCallId"] == start_event["toolCallId"]
    assert result["content"] == "5"
    assert result["role"] == "tool"
    # The result comes before the model's next step, in the same stream.
    assert names.index("TOOL_CALL_RESULT") < names.index("TEXT_MESSAGE_START")
    assert text_of(events) == "Tool demo__add returned: 5"
    [stored] = stored_results(api, thread_id)
    assert stored == {"type": "tool_result", "toolUseId": start_event["toolCallId"],
                      "content": [{"type": "text", "text": "5"}]}
    thread = api.get(f"/v1/threads/{thread_id}").json()
    assert thread["runStatus"] == "idle" and "pendingToolCallIds" not in thread
    assert thread["messages"][-1]["content"] == [{"type": "text", "text": "Tool demo__add returned: 5"}]


def test_a_stdio_mcp_tool_runs_inside_the_run_and_the_model_reads_its_result(api, project):
    stdio_server(project)
    assert_add_round_trip(api)


def test_a_streamable_http_mcp_tool_runs_inside_the_run_and_the_model_reads_its_result(api, project,
                                                                                        mcp_http_url):  # noqa: F811
    http_server(project, mcp_http_url)
    assert_add_round_trip(api)


def test_an_http_sse_mcp_tool_runs_inside_the_run_and_the_model_reads_its_result(api, project,
                                                                                mcp_sse_url):  # noqa: F811
    http_server(project, mcp_sse_url, transport="sse")
    assert_add_round_trip(api)


def test_a_failing_mcp_tool_gives_an_error_result_and_the_run_still_finishes(api, project,
                                                                            mcp_http_url):  # noqa: F811
    http_server(project, mcp_http_url)
    thread_id, events = run(api, "Call demo__fail {}")
    assert types(events)[-1] == "RUN_FINISHED"
    [result] = tool_results(events)
    assert result["content"].startswith("Error: ")
    assert "this tool always fails" in result["content"]
    [stored] = stored_results(api, thread_id)
    assert stored["isError"] is True
    assert text_of(events) == f"Tool demo__fail returned: {result['content']}"


def test_mcp_tool_arguments_that_fail_its_schema_give_an_error_result(api, project, mcp_http_url):  # noqa: F811
    http_server(project, mcp_http_url)
    thread_id, events = run(api, 'demo__add {"a": "two", "b": 3}')
    assert types(events)[-1] == "RUN_FINISHED"
    [stored] = stored_results(api, thread_id)
    assert stored["isError"] is True
    assert text_of(events).startswith("Tool demo__add returned: Error: ")


def test_the_tools_of_several_servers_are_offered_with_their_server_prefix(api, project,
                                                                           mcp_http_url):  # noqa: F811
    http_server(project, mcp_http_url, name="first")
    http_server(project, mcp_http_url, name="second")
    _, events = run(api, "Which tools do you have?")
    text = text_of(events)
    for name in ("first__add", "first__echo", "second__add", "second__fail"):
        assert name in text
    _, events = run(api, 'second__echo then first__add {"a": 1, "b": 1, "text": "hi"}')
    reply = text_of(events)
    # Two calls in one step, each to its own server (the offline model gives both the same arguments;
    # the test server ignores the ones a tool does not take): both results, in call order.
    assert [r["toolCallId"] for r in tool_results(events)] == [
        e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_START"]
    assert reply.splitlines()[0] == "Tool second__echo returned: hi"
    assert reply.splitlines()[1] == "Tool first__add returned: 2"


def test_a_server_that_is_down_is_left_out_and_the_run_goes_on(api, project, live_server_process,
                                                               mcp_http_url):  # noqa: F811
    from tools.models import McpServer

    suffix = uuid.uuid4().hex[:8]
    http_server(project, mcp_http_url, name="up")
    McpServer.objects.create(project=project, name=f"gone-{suffix}", transport="stdio",
                             command=f"/nonexistent/mcp-server-{suffix}")
    McpServer.objects.create(project=project, name=f"closed-{suffix}", transport="http",
                             url=f"http://127.0.0.1:{free_port()}/mcp")
    thread_id, events = run(api, "hello")
    names = types(events)
    assert names[-1] == "RUN_FINISHED", names
    text = text_of(events)
    assert "up__add" in text  # the reachable server's tools are offered
    assert f"gone-{suffix}__" not in text
    assert f"closed-{suffix}__" not in text
    log = live_server_process.log_text()
    assert f"MCP server gone-{suffix} is unreachable" in log
    assert f"MCP server closed-{suffix} is unreachable" in log
    thread = api.get(f"/v1/threads/{thread_id}").json()
    assert thread["runStatus"] == "idle" and "lastRunError" not in thread


def test_a_disabled_mcp_server_is_not_offered(api, project, mcp_http_url):  # noqa: F811
    server = http_server(project, mcp_http_url, name="off")
    server.enabled = False
    server.save()
    _, events = run(api, "hello")
    assert "off__add" not in text_of(events)
    assert "I was offered no tools." in text_of(events)


@pytest.fixture(scope="module")
def short_mcp_timeout_server(django_db_setup, django_db_blocker):
    server = LiveServer("mcp-timeout", {"MCP_TIMEOUT": "2"})
    yield server
    server.stop()


def test_a_tool_that_hangs_gives_a_timeout_error_result(short_mcp_timeout_server, transactional_db, project,
                                                        api_key, mcp_http_url):  # noqa: F811
    from tests.conftest import Api

    api = Api(short_mcp_timeout_server.url, api_key)
    http_server(project, mcp_http_url)
    thread_id, events = run(api, "demo__hang {}")
    names = types(events)
    assert names[-1] == "RUN_FINISHED", names
    [result] = tool_results(events)
    assert result["content"] == "Error: The MCP server 'demo' did not answer within 2 seconds."
    [stored] = stored_results(api, thread_id)
    assert stored["isError"] is True
    assert text_of(events) == f"Tool demo__hang returned: {result['content']}"
    assert api.get(f"/v1/threads/{thread_id}").json()["runStatus"] == "idle"


def test_image_and_resource_results_are_stored_as_resource_blocks(api, project, mcp_http_url):  # noqa: F811
    http_server(project, mcp_http_url)
    thread_id, events = run(api, "demo__image and demo__document {}")
    assert types(events)[-1] == "RUN_FINISHED"
    image, document = stored_results(api, thread_id)
    [image_block] = image["content"]
    assert image_block["type"] == "resource" and image_block["resource"]["mimeType"] == "image/png"
    assert image_block["resource"]["blob"]
    assert document["content"] == [{"type": "resource", "resource": {
        "uri": "memo://greeting", "mimeType": "text/plain", "text": "hello from a resource"}}]
    # The model reads a label for the image and the text of the resource.
    assert text_of(events).splitlines() == ["Tool demo__image returned: [resource (image/png)]",
                                            "Tool demo__document returned: hello from a resource"]


def test_a_result_shown_before_a_cancel_is_kept(api, project, mcp_http_url):  # noqa: F811
    from tests.support.sse import iter_events

    enable_tools(project, "calculate")
    http_server(project, mcp_http_url)
    response = api.post("/v1/threads/runs", {"userKey": "alice", "message": user_message(
        'calculate, then demo__hang {"expression": "1+1"}')}, stream=True)
    thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
    events = iter_events(response)
    seen = []
    for event in events:
        seen.append(event)
        if event["type"] == "TOOL_CALL_RESULT":
            break
    assert seen[-1]["content"] == "2"
    assert api.delete(f"/v1/threads/{thread_id}/runs/{run_id}").status_code == 200
    rest = list(events)
    assert rest[-1]["type"] == "RUN_ERROR" and rest[-1]["code"] == "CANCELLED"
    assert [r["toolUseId"] for r in stored_results(api, thread_id)] == [seen[-1]["toolCallId"]]
    thread = api.get(f"/v1/threads/{thread_id}").json()
    assert thread["runStatus"] == "idle" and thread["lastRunCancelled"] is True


def test_a_tool_result_over_the_projects_cap_is_cut_before_the_model_and_the_store(api, project, live_server_process):
    from projects.config import ProjectSettings, project_settings_save

    # A 5,000-character result on a project that passes on 200 (toolResultMaxChars; the server's
    # default is TOOL_RESULT_MAX_CHARS): before, all of it was stored and re-sent on every later step.
    project_settings_save(project, ProjectSettings(tool_result_max_chars=200))
    stdio_server(project)
    thread_id, events = run(api, 'demo__echo {"text": "' + "x" * 5000 + '"}')

    assert types(events)[-1] == "RUN_FINISHED"
    [result] = stored_results(api, thread_id)
    texts = [b["text"] for b in result["content"] if b["type"] == "text"]
    assert texts[0] == "x" * 200
    assert texts[-1].startswith("[The tool's result was cut: it had 5000 characters")
    # The model was given the cut result and the note (the offline model says back what it got).
    reply = text_of(events)
    assert "x" * 201 not in reply and "The tool's result was cut" in reply
