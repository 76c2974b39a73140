"""`Provider.complete`, the non-streamed call: the openai provider against the fake vendor, and the
offline model's rules for names and suggestions."""
from __future__ import annotations

import asyncio
import json

import pytest

from providers.base import Completion, ModelError, ModelRequest, ModelTask, ModelTool
from providers.offline import OfflineProvider
from providers.offline_tasks import cut_at_word
from providers.openai_provider import OpenAIProvider
from tests.support.fake_openai import Drop, FakeOpenAI, HTTPError, Text

API_KEY = "sk-test-complete"
HELLO = [{"role": "user", "content": "Hello"}]


def complete(provider, request: ModelRequest) -> Completion:
    return asyncio.run(provider.complete(request))


def openai_provider(fake: FakeOpenAI) -> OpenAIProvider:
    return OpenAIProvider(api_key=API_KEY, base_url=fake.base_url, default_model="fake-default", timeout=5)


def test_openai_answers_the_whole_text_with_its_usage_in_one_plain_request(fake_openai):
    fake_openai.script(Text(["Hel", "lo"], usage={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}))

    answer = complete(openai_provider(fake_openai), ModelRequest(messages=HELLO, model="m1", max_tokens=9,
                                                                 temperature=0.5))

    assert answer == Completion(text="Hello", finish_reason="stop",
                                usage={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5})
    body = fake_openai.last_request.body
    assert body == {"model": "m1", "messages": HELLO, "stream": False, "max_tokens": 9, "temperature": 0.5}


def test_openai_json_output_asks_for_json_mode_and_never_sends_tools(fake_openai):
    fake_openai.script(Text('{"a": 1}'))
    tool = ModelTool(name="t", description="d", parameters={"type": "object"})

    answer = complete(openai_provider(fake_openai), ModelRequest(messages=HELLO, tools=[tool], tool_choice="auto",
                                                                 json_output=True))

    assert json.loads(answer.text) == {"a": 1}
    body = fake_openai.last_request.body
    assert body["response_format"] == {"type": "json_object"}
    assert body["model"] == "fake-default"
    assert "tools" not in body and "tool_choice" not in body


@pytest.mark.parametrize(("reply", "code"), [
    (HTTPError(429, retry_after=2), "LLM_RATE_LIMITED"),
    (HTTPError(403), "LLM_CLIENT_ERROR"),
    (HTTPError(500), "LLM_SERVER_ERROR"),
    (Drop(), "LLM_SERVER_ERROR"),
])
def test_openai_failures_are_the_streams_model_errors(fake_openai, reply, code):
    fake_openai.script(reply)

    with pytest.raises(ModelError) as caught:
        complete(openai_provider(fake_openai), ModelRequest(messages=HELLO))

    assert caught.value.code == code
    assert API_KEY not in caught.value.message
    if code == "LLM_RATE_LIMITED":
        assert caught.value.retry_after == 2


def test_the_offline_model_names_from_the_first_user_text():
    task = ModelTask("thread_name", {"firstUserText": "Plan a weekend in Lisbon with museums, seafood"})

    answer = complete(OfflineProvider(delay=0), ModelRequest(messages=HELLO, task=task))

    assert answer.text == "Plan a weekend in Lisbon with museums"


def test_the_offline_model_suggests_components_then_more_as_json():
    task = ModelTask("suggestions", {"components": [{"name": "Card", "description": "A card."}],
                                     "maxSuggestions": 5, "lastUserText": "hi"})

    answer = complete(OfflineProvider(delay=0), ModelRequest(messages=HELLO, json_output=True, task=task))

    assert json.loads(answer.text) == {"suggestions": [
        {"title": "Show Card", "description": "A card.", "detailedSuggestion": "Show Card"},
        {"title": "Tell me more", "description": "Ask for more detail about the last answer.",
         "detailedSuggestion": "Tell me more about that."},
    ]}


def test_the_offline_model_answers_anything_else_with_its_streamed_text_whole():
    answer = complete(OfflineProvider(delay=0), ModelRequest(messages=HELLO))

    assert answer.text.startswith("(offline model) You said: Hello\n\n")
    assert answer.finish_reason == "stop"


def test_the_offline_fail_rule_fails_a_task_like_a_5xx():
    task = ModelTask("thread_name", {"firstUserText": "!fail this"})

    with pytest.raises(ModelError) as caught:
        complete(OfflineProvider(delay=0), ModelRequest(messages=HELLO, task=task))

    assert caught.value.code == "LLM_SERVER_ERROR" and caught.value.retryable


@pytest.mark.parametrize(("text", "expected"), [
    ("short", "short"),
    ("  spaced \n out\ttext ", "spaced out text"),
    ("a" * 12 + " " + "b" * 30, "a" * 12),  # 43 characters: the second word does not fit
    ("a" * 19 + " " + "b" * 20, "a" * 19 + " " + "b" * 20),  # exactly 40 characters
    ("word, " * 10, "word, word, word, word, word, word, word"),  # no dangling comma
    ("x" * 50, "x" * 40),
])
def test_cutting_at_a_word_boundary(text, expected):
    assert cut_at_word(text, 40) == expected
