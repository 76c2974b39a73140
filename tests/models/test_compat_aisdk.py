"""The Vercel AI SDK's default OpenAI provider, `openai("model")` (it calls the Responses API), against
`POST /api/responses`, driven under Node as the SDK's README shows (`tests/compat/aisdk/run.mjs`,
pinned `ai` and `@ai-sdk/openai`, installed by bin/test): text, a streamed answer, a tool the SDK runs
between two calls, and `generateObject`."""
from __future__ import annotations

from pathlib import Path

import pytest

from projects.models import ApiKey, Project
from tests.models.conftest import anthropic_model, apply_file, openai_model
from tests.support import node
from tests.support.fake_openai import Text, ToolCall, ToolCalls

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.node]

AISDK_DIR = Path(__file__).resolve().parents[1] / "compat" / "aisdk"


def run_scenario(name: str, base_url: str, api_key: str, model: str = "offline") -> dict:
    done = node.run_node(AISDK_DIR, "@ai-sdk/openai", ["run.mjs", name], base_url, api_key, {"AISDK_MODEL": model})
    return node.scenario_result(done, name)


def test_generate_and_stream_text_on_the_default_responses_model(live_server_url, api_key):
    result = run_scenario("text", live_server_url, api_key)

    assert "You said: Hello AI SDK" in result["wholeText"] and "You said: Stream AI SDK" in result["streamedText"]
    assert result["finishReason"] == "stop" and result["totalTokens"] > 0


@pytest.fixture
def fake_key(tmp_path, oai) -> str:
    apply_file(tmp_path, f"projects:\n  - name: aisdk\n    models: [{openai_model(oai.fake)}]\n")
    return ApiKey.generate(Project.objects.get(name="aisdk"), "tests")[1]


def test_a_tool_the_sdk_runs_returns_its_output_to_the_next_call(models_url, fake_key, oai):
    oai.script(ToolCalls([ToolCall("get_weather", '{"city": "Oslo"}', id="call_1")]), Text("Rain in Oslo."))

    result = run_scenario("tool_loop", models_url, fake_key, "gpt-fake")

    assert result == {**result, "ran": ["Oslo"], "text": "Rain in Oslo.", "steps": 2}
    assert oai.requests[1].body["messages"][-1] == {"role": "tool", "tool_call_id": "call_1",
                                                   "content": '{"city":"Oslo","forecast":"rain"}'}


def test_generate_object_asks_for_the_schema(models_url, fake_key, oai):
    oai.script(Text('{"name": "Oslo"}'))

    result = run_scenario("object", models_url, fake_key, "gpt-fake")

    assert result["object"] == {"name": "Oslo"}
    assert oai.requests[0].body["response_format"]["type"] == "json_schema"


def test_generate_object_with_anthropic_behind_the_gateway(tmp_path, models_url, ant):
    apply_file(tmp_path, f"projects:\n  - name: aisdk-claude\n    models: [{anthropic_model(ant.fake)}]\n")
    key = ApiKey.generate(Project.objects.get(name="aisdk-claude"), "tests")[1]
    ant.script(Text('{"name": "Oslo"}'))

    result = run_scenario("object", models_url, key, "claude-fake")

    assert result["object"] == {"name": "Oslo"}
    assert ant.requests[0].body["output_config"]["format"]["type"] == "json_schema"


def test_chat_completions_mode_answers_text_and_objects(models_url, fake_key, oai):
    oai.script(Text("Hello from chat mode."), Text('{"name": "Oslo"}'))

    result = run_scenario("chat_mode", models_url, fake_key, "gpt-fake")

    assert (result["text"], result["object"]) == ("Hello from chat mode.", {"name": "Oslo"})
    assert result["totalTokens"] > 0
    assert oai.requests[1].body["response_format"]["type"] == "json_schema"
