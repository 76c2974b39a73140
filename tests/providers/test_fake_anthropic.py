"""The fake Anthropic server speaks the real wire: the official `anthropic` SDK reads it unchanged
(its typed stream accumulates the same message our provider folds from the raw events)."""
from __future__ import annotations

import anthropic
import pytest

from tests.support.fake_anthropic import FakeAnthropic
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
    assert thinking.type == "thinking" and thinking.thinking == "Hmm, weather." and thinking.signature == "sig-fake"
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
