"""Client tool names the providers refuse (dots, slashes, 150 characters) work: the provider is sent a
safe alias, every event and stored call carries the client's own name, through @tambo-ai/client."""
from __future__ import annotations

import pytest

from providers.tool_names import SAFE, ToolAliases, alias_of
from providers.base import ModelRequest, ModelTool, ToolCallDelta
from tests.models.conftest import apply_file, openai_model, project_runs
from tests.runs.conftest import event_of
from tests.support import node
from tests.support.fake_openai import Text, ToolCall, ToolCalls

pytestmark = pytest.mark.django_db(transaction=True)

DOTTED = "github__search.repos"
LONG = "mcp/server.example/" + "x" * (150 - len("mcp/server.example/"))


def test_aliases_are_safe_distinct_and_map_back():
    names = [DOTTED, LONG, LONG + "y", "plain_name", "a b"]
    aliases = [alias_of(n) for n in names]
    assert all(SAFE.match(a) for a in aliases) and len(set(aliases)) == len(names)
    assert alias_of("plain_name") == "plain_name"
    mapping = ToolAliases(names)
    request = mapping.request(ModelRequest(messages=[{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": DOTTED, "arguments": "{}"}}]}],
        tools=[ModelTool(DOTTED, "", {})], tool_choice={"name": DOTTED}))
    assert request.tools[0].name == alias_of(DOTTED) and request.tool_choice == {"name": alias_of(DOTTED)}
    assert request.messages[0]["tool_calls"][0]["function"]["name"] == alias_of(DOTTED)
    assert mapping.delta(ToolCallDelta(0, "c", alias_of(DOTTED), "")).name == DOTTED


def test_a_vendor_sees_aliases_and_the_client_its_own_names(tmp_path, models_url, oai):
    apply_file(tmp_path, f"projects:\n  - name: named-tools\n    models: [{openai_model(oai.fake)}]\n")
    runs = project_runs(models_url, "named-tools")
    oai.script(ToolCalls([ToolCall(alias_of(DOTTED), ['{"q": "x"}'], id="call_a")]), Text("done"))
    tools = [{"name": DOTTED, "description": "d", "inputSchema": {"type": "object", "properties": {}}}]
    thread_id, events = runs.run_new("search", tools=tools)
    assert event_of(events, "TOOL_CALL_START")["toolCallName"] == DOTTED
    pending = event_of(events, "CUSTOM", "tambo.run.awaiting_input")["value"]["pendingToolCalls"]
    assert pending[0]["toolName"] == DOTTED
    sent = oai.requests[0].body
    assert [t["function"]["name"] for t in sent["tools"]] == [alias_of(DOTTED)]
    result = {"type": "tool_result", "toolUseId": "call_a", "content": [{"type": "text", "text": "ok"}]}
    runs.run(thread_id, {"role": "user", "content": [result]}, previousRunId=events[0]["runId"], tools=tools)
    history = oai.requests[1].body["messages"]
    assert [c["function"]["name"] for m in history for c in m.get("tool_calls") or ()] == [alias_of(DOTTED)]
    stored = [b for m in runs.thread(thread_id)["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert [b["name"] for b in stored] == [DOTTED]


@pytest.mark.node
def test_the_official_client_registers_and_answers_tools_under_its_own_names(live_server_url, api_key, api):
    result = node.run_scenario("models.mjs", "dotted_tool_names", live_server_url, api_key)
    assert result["toolNames"] == [DOTTED, LONG]
    thread = api.thread(result["threadId"])
    uses = [b["name"] for m in thread["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert uses == [DOTTED, LONG]
