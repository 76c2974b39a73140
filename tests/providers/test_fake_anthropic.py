"""The fake Anthropic server speaks the real wire: the official `anthropic` SDK reads it unchanged
(its typed stream accumulates the same message our provider folds from the raw events)."""
from __future__ import annotations

import anthropic
import pytest

from tests.support.fake_anthropic import FakeAnthropic, signature_of
from tests.support.fake_openai import HTTPError, Text, ToolCall, ToolCalls


@pytest.fixture
def fake_anthropic():
    with FakeAnthropic() as fake:
        yield fake


def client(fake: FakeAnthropic) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fake.base_url, api_key="sk-ant-test", max_retries=0)


def test_the_sdk_accumulates_a_streamed_answer_with_thinking_text_and_a_tool_call(fake_anthropic):
    fake_anthropic.script(ToolCalls([ToolCall("get_weather", ['{"ci', 'ty": "Paris"}'], id="toolu_1")],
                                    text=["Let me ", "check."], reasoning=["Hmm, ", "weather."]))
    with client(fake_anthropic).messages.stream(model="claude-test", max_tokens=100,
                                                messages=[{"role": "user", "content": "hi"}]) as stream:
        kinds = [event.type for event in stream]
        message = stream.get_final_message()
    assert kinds[0] == "message_start" and "message_stop" in kinds
    thinking, text, tool = message.content
    assert thinking.type == "thinking" and thinking.thinking == "Hmm, weather." and thinking.signature == signature_of("Hmm, weather.")
    assert text.type == "text" and text.text == "Let me check."
    assert tool.type == "tool_use" and tool.id == "toolu_1" and tool.name == "get_weather"
    assert tool.input == {"city": "Paris"}
    assert message.stop_reason == "tool_use" and message.usage.input_tokens == 10
    (request,) = fake_anthropic.requests
    assert request.path == "/v1/messages" and request.api_key == "sk-ant-test"
    assert request.headers.get("anthropic-version")


def test_the_sdk_reads_a_whole_answer(fake_anthropic):
    fake_anthropic.script(Text(["Hel", "lo"]))
    message = client(fake_anthropic).messages.create(model="claude-test", max_tokens=10,
                                                     messages=[{"role": "user", "content": "hi"}])
    assert [b.text for b in message.content] == ["Hello"] and message.stop_reason == "end_turn"


def test_the_sdk_raises_its_own_error_classes_with_retry_after(fake_anthropic):
    fake_anthropic.script(HTTPError(429, retry_after=7), HTTPError(401), HTTPError(529))
    sdk = client(fake_anthropic)
    ask = dict(model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(anthropic.RateLimitError) as limited:
        sdk.messages.create(**ask)
    assert limited.value.response.headers["retry-after"] == "7"
    with pytest.raises(anthropic.AuthenticationError):
        sdk.messages.create(**ask)
    with pytest.raises(anthropic.APIStatusError) as overloaded:
        sdk.messages.create(**ask)
    assert overloaded.value.status_code == 529


def test_a_tool_loop_with_thinking_on_must_send_back_the_signed_thinking(fake_anthropic):
    fake_anthropic.script(ToolCalls([ToolCall("get_weather", ['{"city": "Oslo"}'], id="toolu_1")],
                                    reasoning=["Weather ", "tool."], redacted="opaque-1"),
                          Text("Sunny."), Text("Sunny."))
    sdk = client(fake_anthropic)
    ask = dict(model="claude-test", max_tokens=2048, thinking={"type": "enabled", "budget_tokens": 1024},
               tools=[{"name": "get_weather", "input_schema": {"type": "object"}}])
    first = sdk.messages.create(messages=[{"role": "user", "content": "weather?"}], **ask)
    thinking, redacted, tool_use = first.content
    assert (thinking.type, redacted.type, redacted.data) == ("thinking", "redacted_thinking", "opaque-1")
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sun"}]}
    without = {"role": "assistant", "content": [tool_use.model_dump(exclude_none=True)]}
    with pytest.raises(anthropic.BadRequestError) as refused:
        sdk.messages.create(messages=[{"role": "user", "content": "weather?"}, without, result], **ask)
    assert "must start with a thinking block" in refused.value.message
    forged = {"role": "assistant", "content": [{**thinking.model_dump(), "thinking": "Forged."},
                                               tool_use.model_dump(exclude_none=True)]}
    with pytest.raises(anthropic.BadRequestError) as forgery:
        sdk.messages.create(messages=[{"role": "user", "content": "weather?"}, forged, result], **ask)
    assert "Invalid `signature`" in forgery.value.message
    signed = {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in first.content]}
    second = sdk.messages.create(messages=[{"role": "user", "content": "weather?"}, signed, result], **ask)
    assert second.content[0].text == "Sunny."
    # Without thinking the same loop needs no thinking blocks.
    plain = {k: v for k, v in ask.items() if k != "thinking"}
    assert sdk.messages.create(messages=[{"role": "user", "content": "weather?"}, without, result], **plain)
