"""The GenAI conventions' message shapes that content capture puts on the `chat` spans (telemetry/content.py)."""
from __future__ import annotations

import json

import pytest

from telemetry.content import capture_enabled, input_messages, output_messages


@pytest.mark.parametrize(("value", "on"), [("true", True), ("TRUE", True), ("span_only", True), ("false", False),
                                           ("", False), ("no_content", False), ("1", False)])
def test_only_true_or_a_span_mode_turns_it_on(monkeypatch, value, on):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", value)
    assert capture_enabled() is on


def test_a_conversation_with_a_tool_round_trip_and_images_becomes_role_and_parts():
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo"}},
                                     {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg"}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "cat"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a cat"},
    ]
    assert json.loads(input_messages(messages)) == [
        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
        {"role": "user", "parts": [{"type": "text", "content": "What is this?"},
                                   {"type": "blob", "modality": "image", "mime_type": "image/png"},
                                   {"type": "uri", "modality": "image", "uri": "https://example.com/a.jpg"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "lookup",
                                         "arguments": {"q": "cat"}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "a cat"}]},
    ]
    assert "iVBORw0KGgo" not in input_messages(messages)  # an inline image's bytes stay out of the trace


def test_an_answer_is_one_assistant_message_with_its_finish_reason_and_unparsable_arguments_kept():
    answer = json.loads(output_messages(text="Looking.", calls=[("call_2", "lookup", '{"q": ')],
                                        finish_reason="tool_calls"))
    assert answer == [{"role": "assistant", "finish_reason": "tool_calls", "parts": [
        {"type": "text", "content": "Looking."},
        {"type": "tool_call", "id": "call_2", "name": "lookup", "arguments": '{"q": '}]}]
