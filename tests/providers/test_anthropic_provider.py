"""The `anthropic` provider against the fake Messages server, through the official `anthropic` client:
streamed text, tool use with its input JSON as it streams, thinking, usage, the error mapping and
Retry-After, and the request it sends (system, alternating turns, tool results, images)."""
from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from providers.anthropic_provider import AnthropicProvider
from providers.base import (ModelError, ModelRequest, ModelTool, ReasoningDelta, StepEnd, TextDelta,
                            ToolCallDelta)
from tests.support.batches import coarsens
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import Drop, HTTPError, Stall, StreamError, Text, ToolCall, ToolCalls

API_KEY = "sk-ant-DO-NOT-LEAK-77"
HELLO = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}]
WEATHER = ModelTool(name="get_weather", description="Weather for a city.",
                    parameters={"type": "object", "properties": {"city": {"type": "string"}}})


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


def provider(fake: FakeAnthropic, timeout: float = 5.0) -> AnthropicProvider:
    return AnthropicProvider(api_key=API_KEY, base_url=fake.base_url, default_model="claude-default",
                             timeout=timeout)


def collect(p: AnthropicProvider, request: ModelRequest | None = None) -> list[Any]:
    async def run() -> list[Any]:
        return [d async for d in p.stream(request or ModelRequest(messages=HELLO))]
    return asyncio.run(run())


def failure(p: AnthropicProvider, request: ModelRequest | None = None) -> tuple[list[Any], ModelError]:
    seen: list[Any] = []

    async def run() -> ModelError:
        with pytest.raises(ModelError) as caught:
            async for d in p.stream(request or ModelRequest(messages=HELLO)):
                seen.append(d)
        return caught.value
    return seen, asyncio.run(run())


def test_text_streams_with_usage_and_the_request_is_in_messages_form(fake):
    fake.script(Text(["Hel", "lo"]))
    deltas = collect(provider(fake))
    assert coarsens([d.text for d in deltas if isinstance(d, TextDelta)], ["Hel", "lo"])
    assert deltas[-1] == StepEnd("stop", {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12})
    (request,) = fake.requests
    assert request.api_key == API_KEY and request.body["stream"] is True
    assert request.body["model"] == "claude-default" and request.body["max_tokens"] == 4096
    assert request.body["system"] == "Be brief."
    assert request.body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}]


def test_tool_use_streams_its_input_json_and_thinking_comes_first(fake):
    fake.script(ToolCalls([ToolCall("get_weather", ['{"ci', 'ty": "Pa', 'ris"}'], id="toolu_9")],
                          reasoning=["I should ", "look it up."]))
    deltas = collect(provider(fake), ModelRequest(messages=HELLO, tools=[WEATHER], tool_choice="required"))
    reasoning = [d for d in deltas if isinstance(d, ReasoningDelta)]
    assert "".join(d.text for d in reasoning) == "I should look it up." and {d.block for d in reasoning} == {0}
    calls = [d for d in deltas if isinstance(d, ToolCallDelta)]
    assert (calls[0].index, calls[0].id, calls[0].name) == (0, "toolu_9", "get_weather")
    assert all((c.index, c.id, c.name) == (0, None, None) for c in calls[1:])
    assert "".join(c.arguments for c in calls) == '{"city": "Paris"}'
    assert deltas.index(reasoning[-1]) < deltas.index(calls[0])
    assert deltas[-1].finish_reason == "tool_calls"
    body = fake.requests[0].body
    assert body["tools"] == [{"name": "get_weather", "description": "Weather for a city.",
                              "input_schema": WEATHER.parameters}]
    assert body["tool_choice"] == {"type": "any"}


def test_the_conversation_becomes_alternating_turns_with_tool_results_and_images(fake):
    fake.script(Text("ok"))
    messages = [
        {"role": "system", "content": "Sys."},
        {"role": "user", "content": [{"type": "text", "text": "Look"},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}]},
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}},
            {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "cold"},
        {"role": "tool", "tool_call_id": "c2", "content": "warm"},
        {"role": "system", "content": "Additional context: page=1"},
    ]
    collect(provider(fake), ModelRequest(messages=messages, model="claude-x", max_tokens=50, temperature=0.2,
                                         parameters={"top_k": 5, "custom_flag": True}))
    body = fake.requests[0].body
    assert body["system"] == "Sys." and body["model"] == "claude-x" and body["max_tokens"] == 50
    assert body["temperature"] == 0.2 and body["top_k"] == 5 and body["custom_flag"] is True
    user, assistant, results = body["messages"]
    assert user["content"][1] == {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                              "data": "iVBO"}}
    assert assistant["content"][1] == {"type": "tool_use", "id": "c1", "name": "get_weather",
                                       "input": {"city": "Oslo"}}
    assert [b["type"] for b in results["content"]] == ["tool_result", "tool_result", "text"]
    assert results["content"][0]["tool_use_id"] == "c1" and results["role"] == "user"


@pytest.mark.parametrize("status, code, retryable", [
    (429, "LLM_RATE_LIMITED", True), (401, "LLM_CLIENT_ERROR", False), (400, "LLM_CLIENT_ERROR", False),
    (500, "LLM_SERVER_ERROR", True), (529, "LLM_SERVER_ERROR", True)])
def test_http_errors_map_to_the_run_error_codes(fake, status, code, retryable):
    fake.script(HTTPError(status, message=f"secret detail {API_KEY}", retry_after=3 if status == 429 else None))
    seen, error = failure(provider(fake))
    assert seen == [] and error.code == code and error.retryable is retryable and error.status == status
    assert API_KEY not in error.message and "secret detail" not in error.message
    if status == 429:
        assert error.retry_after == 3 and error.retry_after_header == 3


@pytest.mark.parametrize("reply", [Drop(after=ToolCalls([ToolCall("get_weather", ['{"ci'])])),
                                   StreamError(after=["partial"]), Stall(after=["wait"], seconds=30)])
def test_a_cut_broken_or_hanging_stream_is_a_server_error(fake, reply):
    fake.script(reply)
    seen, error = failure(provider(fake, timeout=0.5))
    assert error.code == "LLM_SERVER_ERROR" and error.retryable
    assert not any(isinstance(d, StepEnd) for d in seen)


def test_a_complete_call_returns_the_text(fake):
    fake.script(Text(["A ", "name"]))
    answer = asyncio.run(provider(fake).complete(ModelRequest(messages=HELLO)))
    assert answer.text == "A name" and answer.usage["prompt_tokens"] == 10
    assert fake.requests[0].body.get("stream") in (None, False)
    json.dumps(fake.requests[0].body)


def test_a_text_to_continue_is_a_prefill_but_not_with_thinking_on():
    """runs/carry.py: a taken-over run ends its request with the text seen; Anthropic continues it, but
    refuses it with thinking on (the last assistant turn must then open with thinking)."""
    from providers.anthropic_messages import messages_params

    messages = [{"role": "user", "content": "Tell me"}, {"role": "assistant", "content": "Once upon"}]
    plain = messages_params(ModelRequest(messages=messages), default_model="m")
    assert [t["role"] for t in plain["messages"]] == ["user", "assistant"]
    assert plain["messages"][-1]["content"] == [{"type": "text", "text": "Once upon"}]
    thinking = messages_params(ModelRequest(messages=messages, parameters={"reasoning_effort": "low"}), default_model="m")
    assert "thinking" in thinking and [t["role"] for t in thinking["messages"]] == ["user"]
