"""Reasoning from both providers streams as the THINKING_* events @tambo-ai/client reads, is stored on
the message (`reasoning`, `reasoningDurationMS`), returned with it, and never sent back to the model
as text; Anthropic's signed thinking goes back, unmodified, with the turn's tool calls."""
from __future__ import annotations

import pytest

from tests.models.conftest import anthropic_model, apply_file, openai_model, project_runs
from tests.runs.conftest import WEATHER_TOOL, event_of, text_of, tool_result
from tests.support.batches import coarsens
from tests.support.fake_anthropic import signature_of
from tests.support.fake_openai import Text, ToolCall, ToolCalls

pytestmark = pytest.mark.django_db(transaction=True)

THINKING_OPEN = ["THINKING_START", "THINKING_TEXT_MESSAGE_START"]
THINKING_CLOSE = ["THINKING_TEXT_MESSAGE_END", "THINKING_END"]


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
    start, end = kinds.index("THINKING_START"), kinds.index("THINKING_END")
    # The two reasoning pieces are one content event when one read of the model's stream held both
    # (providers/batching.py), two otherwise.
    assert kinds[start:start + 2] == THINKING_OPEN and kinds[end - 1:end + 1] == THINKING_CLOSE
    assert set(kinds[start + 2:end - 1]) == {"THINKING_TEXT_MESSAGE_CONTENT"}
    assert kinds.index("THINKING_END") < kinds.index("TEXT_MESSAGE_START")
    thinking = [e["delta"] for e in events if e["type"] == "THINKING_TEXT_MESSAGE_CONTENT"]
    assert coarsens(thinking, ["Let me ", "think."]), thinking
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


THINKING_ON = "parameters: {thinking: {type: enabled, budget_tokens: 1024}}"


def test_a_client_tool_round_trip_with_thinking_on_sends_the_signed_thinking_back(tmp_path, models_url, ant):
    apply_file(tmp_path, f"projects:\n  - name: thinker-loop\n    models: [{anthropic_model(ant.fake)}]\n"
                         f"    {THINKING_ON}\n")
    ant.script(ToolCalls([ToolCall("get_weather", ['{"city": ', '"Oslo"}'], id="toolu_w")], text="Checking.",
                         reasoning=["The user wants ", "weather; ", "call the tool."], redacted="EmwKAhgB-opaque"),
               Text("Sunny in Oslo."))
    runs = project_runs(models_url, "thinker-loop")
    thread_id, events = runs.run_new("weather in Oslo?", tools=[WEATHER_TOOL])
    event_of(events, "CUSTOM", "tambo.run.awaiting_input")
    answer = runs.run(thread_id, {"role": "user", "content": [tool_result("toolu_w", "sunny")]},
                      previousRunId=events[0]["runId"], tools=[WEATHER_TOOL])
    assert answer[-1]["type"] == "RUN_FINISHED", answer[-1]
    assert text_of(answer) == "Sunny in Oslo."
    first, second = ant.requests[-2:]
    assert first.body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    calling = [m for m in second.body["messages"] if m["role"] == "assistant"][-1]
    thought = "The user wants weather; call the tool."
    assert calling["content"] == [
        {"type": "thinking", "thinking": thought, "signature": signature_of(thought)},
        {"type": "redacted_thinking", "data": "EmwKAhgB-opaque"},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_w", "name": "get_weather", "input": {"city": "Oslo"}},
    ]
    # What the client sees stays the text of the reasoning; the signature is never shown.
    stored = runs.thread(thread_id)["messages"]
    assert [m.get("reasoning") for m in stored if m["role"] == "assistant"][0] == [thought]
    assert signature_of(thought) not in str(stored)


def test_a_server_side_step_after_thinking_sends_it_back_within_the_run(tmp_path, models_url, ant):
    # A component call is answered by the server: the loop's next request is made in the same run.
    apply_file(tmp_path, f"projects:\n  - name: thinker-inline\n    models: [{anthropic_model(ant.fake)}]\n"
                         f"    {THINKING_ON}\n")
    card = {"name": "Card", "description": "A card.",
            "propsSchema": {"type": "object", "properties": {"title": {"type": "string"}}}}
    ant.script(ToolCalls([ToolCall("show_component_Card", ['{"title": "Hi"}'], id="toolu_c")],
                         reasoning=["Show a card."]),
               Text("Here it is."))
    _, events = project_runs(models_url, "thinker-inline").run_new("a card", availableComponents=[card])
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    calling = [m for m in ant.requests[-1].body["messages"] if m["role"] == "assistant"][-1]
    assert calling["content"][0] == {"type": "thinking", "thinking": "Show a card.",
                                     "signature": signature_of("Show a card.")}


def test_an_openai_compatible_vendor_never_receives_anthropic_thinking_blocks(tmp_path, models_url, ant, oai):
    # The same thread moves from an Anthropic project model to an OpenAI-compatible one.
    apply_file(tmp_path, f"projects:\n  - name: thinker-moves\n    models: [{anthropic_model(ant.fake)}]\n"
                         f"    {THINKING_ON}\n")
    ant.script(ToolCalls([ToolCall("get_weather", ['{"city": "Oslo"}'], id="toolu_m")], reasoning=["Tool."]))
    runs = project_runs(models_url, "thinker-moves")
    thread_id, events = runs.run_new("weather?", tools=[WEATHER_TOOL])
    apply_file(tmp_path, f"projects:\n  - name: thinker-moves\n    models: [{openai_model(oai.fake)}]\n"
                         "    parameters: {}\n")
    oai.script(Text("Sunny."))
    answer = runs.run(thread_id, {"role": "user", "content": [tool_result("toolu_m", "sunny")]},
                      previousRunId=events[0]["runId"], tools=[WEATHER_TOOL])
    assert answer[-1]["type"] == "RUN_FINISHED", answer[-1]
    sent = oai.requests[-1].body["messages"]
    assert any(m.get("tool_calls") for m in sent) and not any("thinking_blocks" in m for m in sent)
