"""Reasoning from both providers streams as the THINKING_* events @tambo-ai/client reads, is stored on
the message (`reasoning`, `reasoningDurationMS`), returned with it, and never sent back to the model."""
from __future__ import annotations

import pytest

from tests.models.conftest import anthropic_model, apply_file, openai_model, project_runs
from tests.runs.conftest import text_of
from tests.support.fake_openai import Text, ToolCall, ToolCalls

pytestmark = pytest.mark.django_db(transaction=True)

THINKING = ["THINKING_START", "THINKING_TEXT_MESSAGE_START", "THINKING_TEXT_MESSAGE_CONTENT",
            "THINKING_TEXT_MESSAGE_CONTENT", "THINKING_TEXT_MESSAGE_END", "THINKING_END"]


@pytest.mark.parametrize("vendor_name", ["oai", "ant"])
def test_reasoning_streams_before_the_text_and_is_stored_on_the_message(tmp_path, models_url, vendor_name,
                                                                         request):
    vendor = request.getfixturevalue(vendor_name)
    spec = openai_model(vendor.fake) if vendor_name == "oai" else anthropic_model(vendor.fake)
    apply_file(tmp_path, f"projects:\n  - name: thinker\n    models: [{spec}]\n")
    vendor.script(Text(["The answer."], reasoning=["Let me ", "think."]),
                  Text("Second answer."))
    runs = project_runs(models_url, "thinker")
    thread_id, events = runs.run_new("why?")
    kinds = [e["type"] for e in events]
    start = kinds.index("THINKING_START")
    assert kinds[start:start + 6] == THINKING
    assert kinds.index("THINKING_END") < kinds.index("TEXT_MESSAGE_START")
    assert "".join(e["delta"] for e in events if e["type"] == "THINKING_TEXT_MESSAGE_CONTENT") == "Let me think."
    assert text_of(events) == "The answer."
    answer = runs.thread(thread_id)["messages"][-1]
    assert answer["reasoning"] == ["Let me think."] and isinstance(answer["reasoningDurationMS"], int)
    assert answer["content"] == [{"type": "text", "text": "The answer."}]
    runs.run(thread_id, "and?", previousRunId=events[0]["runId"])
    assert "Let me think." not in str(vendor.requests[-1].body["messages"])


def test_reasoning_before_a_tool_call_closes_before_the_call(tmp_path, models_url, ant):
    apply_file(tmp_path, f"projects:\n  - name: thinker-tools\n    models: [{anthropic_model(ant.fake)}]\n")
    ant.script(ToolCalls([ToolCall("get_weather", ['{"city": "Oslo"}'])], reasoning=["Weather tool."]))
    tool = {"name": "get_weather", "description": "Weather.", "inputSchema": {"type": "object", "properties": {}}}
    _, events = project_runs(models_url, "thinker-tools").run_new("weather?", tools=[tool])
    kinds = [e["type"] for e in events]
    assert kinds.index("THINKING_END") < kinds.index("TOOL_CALL_START")
