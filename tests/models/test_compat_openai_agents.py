"""The OpenAI Agents SDK (`@openai/agents`) with its default model API, the Responses API, against
`POST /api/responses`, and with its chat-completions API (`setOpenAIAPI`), driven under Node as its README shows (`tests/compat/openai-agents/run.mjs`,
pinned, installed by bin/test): an agent turn whose function tool the SDK runs between two calls."""
from __future__ import annotations

from pathlib import Path

import pytest

from projects.models import ApiKey, Project
from tests.models.conftest import apply_file, openai_model
from tests.support import node
from tests.support.fake_openai import Text, ToolCall, ToolCalls

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.node]

AGENTS_DIR = Path(__file__).resolve().parents[1] / "compat" / "openai-agents"


@pytest.mark.parametrize("api", ["responses", "chat_completions"])
def test_an_agent_turn_runs_its_tool_and_answers_with_the_result(tmp_path, models_url, oai, api):
    apply_file(tmp_path, f"projects:\n  - name: agents\n    models: [{openai_model(oai.fake)}]\n")
    key = ApiKey.generate(Project.objects.get(name="agents"), "tests")[1]
    oai.script(ToolCalls([ToolCall("get_weather", '{"city": "Oslo"}', id="call_1")]), Text("Rain in Oslo."))

    done = node.run_node(AGENTS_DIR, "@openai/agents", ["run.mjs", "tool_turn"], models_url, key,
                         {"AGENTS_MODEL": "gpt-fake", "AGENTS_API": api})
    result = node.scenario_result(done, "tool_turn")

    assert result["finalOutput"] == "Rain in Oslo."
    first, second = (request.body for request in oai.requests)
    assert first["messages"][0] == {"role": "system", "content": "Be brief."}
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "rain in Oslo"}
