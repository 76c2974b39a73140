"""A generic AG-UI client (`@ag-ui/client` 1.0.0, HttpAgent) drives POST /v1/agui, proven under Node.

Each test runs one scenario of `tests/compat/agui/run.mjs` (installed by `npm ci` in tests/compat/agui;
bin/test does it) against the live server, fails with the script's own message on any mismatch, then
checks through the REST API what the server stored. The README's HttpAgent snippet is run as written.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.support import node
from tests.support.node import USER_KEY
from threads.models import Thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.node]

AGUI_DIR = Path(__file__).resolve().parent / "compat" / "agui"
README = Path(__file__).resolve().parents[1] / "docs" / "clients.md"


def node_or_fail() -> str:
    return node.node_for(AGUI_DIR, "@ag-ui/client")


# The client versions tests/compat/agui installs: 1.0.0, and 0.0.59 under an npm alias (the version
# CopilotKit's runtime 1.75.0 pins; strict about AG-UI 1.0's fields, and it sends no protocolVersion).
CLIENTS = ["@ag-ui/client", "ag-ui-client-0059"]


def run_node(args: list[str], base_url: str, api_key: str, client: str = "@ag-ui/client",
             extra_env: dict[str, str] | None = None):
    return node.run_node(AGUI_DIR, "@ag-ui/client", args, base_url, api_key,
                         {"SUPPRESS_TRANSFORMATION_WARNINGS": "", "AGUI_CLIENT": client, **(extra_env or {})})


def run_scenario(name: str, base_url: str, api_key: str, client: str = "@ag-ui/client",
                 extra_env: dict[str, str] | None = None) -> dict:
    done = run_node(["run.mjs", name], base_url, api_key, client, extra_env)
    result = node.scenario_result(done, name)
    # The client warns on stderr about anything in the stream it had to strip or could not read.
    assert "[ag-ui]" not in done.stderr, done.stderr
    return result


def thread_for(api, client_thread_id: str) -> dict:
    thread = Thread.objects.get(external_id=client_thread_id, user_key=USER_KEY)
    return api.thread(thread.id)


@pytest.mark.parametrize("client", CLIENTS)
def test_http_agent_gets_the_answer_and_history_sent_twice_is_stored_once(live_server_url, api_key, api, client):
    result = run_scenario("text_run", live_server_url, api_key, client)

    thread = thread_for(api, result["threadId"])
    assert [m["role"] for m in thread["messages"]] == ["user", "assistant", "user", "assistant"]
    # The assistant messages are stored under the ids the client holds; the user's under its own ids.
    assert [m["id"] for m in thread["messages"]][1::2] == result["messageIds"][1::2]
    assert [thread["messages"][i]["content"][0]["text"] for i in (1, 3)] == result["answers"]
    assert thread["runStatus"] == "idle"


@pytest.mark.parametrize("client", CLIENTS)
def test_a_frontend_tool_ends_the_run_and_its_result_continues_the_thread(live_server_url, api_key, api, client):
    result = run_scenario("client_tool", live_server_url, api_key, client)

    thread = thread_for(api, result["threadId"])
    assert "pendingToolCallIds" not in thread
    blocks = [b for m in thread["messages"] for b in m["content"]]
    assert [b["type"] for b in blocks] == ["text", "tool_use", "tool_result", "text"]
    assert blocks[1]["id"] == blocks[2]["toolUseId"] == result["toolCallId"]
    assert blocks[3]["text"] == result["finalText"]


def test_the_raw_stream_passes_the_clients_verifier_and_returns_the_state(live_server_url, api_key, api):
    result = run_scenario("verify_events", live_server_url, api_key)

    stored = Thread.objects.get(external_id=result["threadId"])
    assert stored.agui_state == {"step": 1, "items": ["a"]}


@pytest.mark.parametrize("client", CLIENTS)
def test_state_survives_a_reload_of_the_app(live_server_url, api_key, client):
    result = run_scenario("state_reload", live_server_url, api_key, client)

    assert result["afterReload"] == {"cart": ["apple"]}
    assert result["afterSecondReload"] == {"cart": ["apple", "pear"]}
    assert Thread.objects.get(external_id=result["threadId"]).agui_state == {"cart": ["apple", "pear"]}


def test_a_refused_request_fails_the_clients_run_with_the_problem(live_server_url, api_key):
    result = run_scenario("refused", live_server_url, api_key)

    assert result == {**result, "status": 400, "field": "forwardedProps.userKey"}
    assert not Thread.objects.exists()


def readme_snippet() -> str:
    """The HttpAgent example of docs/clients.md, exactly as a reader copies it."""
    match = re.search(r"<!-- agui-example -->\s*```js\n(.*?)```", README.read_text(), re.S)
    assert match, "docs/clients.md has no ```js block after <!-- agui-example -->"
    return match.group(1)


def test_the_readme_http_agent_example_runs_as_written(live_server_url, api_key, tmp_path):
    node_or_fail()
    code = readme_snippet().replace("http://localhost:8000", live_server_url).replace('"tk_..."', json.dumps(api_key))
    # Inside the folder, so Node resolves @ag-ui/client from its node_modules.
    script = AGUI_DIR / f".readme-example-{os.getpid()}.mjs"
    script.write_text(code)
    try:
        done = run_node([script.name], live_server_url, api_key)
    finally:
        script.unlink()

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("(offline model) You said: Hello!"), done.stdout
    thread = Thread.objects.get()
    assert thread.external_id and thread.user_key == "alice"


def test_abort_run_cancels_the_run_and_the_partial_answer_is_stored_once(live_server_url, api_key, api):
    result = run_scenario("abort_then_continue", live_server_url, api_key)

    thread = thread_for(api, result["threadId"])
    assert [m["role"] for m in thread["messages"]] == ["user", "assistant", "user", "assistant"]
    partial = thread["messages"][1]
    assert partial["id"] == result["partialId"] and partial["isCancelled"] is True
    assert "lastRunCancelled" not in thread  # the turn after the cancel completed


def test_a_server_tools_result_reaches_the_client_and_is_not_stored_twice(live_server_url, api_key, api, project):
    from tools.models import ProjectTool

    ProjectTool.objects.create(project=project, name="calculate")

    result = run_scenario("server_tool", live_server_url, api_key)

    assert result["clientRoles"] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    thread = thread_for(api, result["threadId"])
    blocks = [b for m in thread["messages"] for b in m["content"]]
    assert [b["type"] for b in blocks] == ["text", "tool_use", "tool_result", "text", "text", "text"]
    assert blocks[2] == {"type": "tool_result", "toolUseId": result["toolCallId"],
                         "content": [{"type": "text", "text": "42"}]}


@pytest.mark.parametrize("resume, text", [
    ({"status": "resolved", "payload": {"action": "accept", "content": {"seats": 2}}}, "Booked 2 seats for Tosca."),
    ({"status": "cancelled"}, "Nothing booked for Tosca: the user chose cancel."),
])
def test_an_mcp_tools_request_for_input_is_an_interrupt_answered_by_resume(live_server_url, api_key, project,
                                                                            resume, text):
    """docs/protocol.md#the-ag-ui-endpoint: the real elicitation test server (2026-07-28), @ag-ui/client 1.0."""
    from tests.support.mcp_fixtures import running_elicit_mcp_server
    from tools.models import McpServer

    with running_elicit_mcp_server() as url:
        McpServer.objects.create(project=project, name="demo", transport="http", url=url)
        result = run_scenario("mcp_input", live_server_url, api_key, extra_env={"MCP_INPUT_RESUME": json.dumps(resume)})

    interrupt = result["interrupt"]
    assert interrupt["reason"] == "mcp_input_required" and interrupt["message"] == "How many seats for Tosca?"
    assert interrupt["responseSchema"]["required"] == ["seats"]
    assert result["result"] == text and result["finalText"] == f"Tool demo__book returned: {text}"
