"""Thread names and suggestions through the `openai` provider, against the scripted fake vendor."""
from __future__ import annotations

import json
from typing import Iterator

import pytest
from django.conf import settings as django_settings

from tests.assist.conftest import DATA_CARD
from tests.assist.test_generate_name import generate_name
from tests.assist.test_suggestions import generate, v1_path
from tests.conftest import Api
from tests.support.fake_openai import HTTPError, Stall, Text, Trickle
from tests.support.fixtures_openai import Vendor, fake, vendor  # noqa: F401 - fixtures
from tests.support.live import LiveServer, openai_live_server
from tests.support.problems import assert_problem

pytestmark = pytest.mark.django_db(transaction=True)

VENDOR_KEY = "sk-secret-assist"
IDEAS = {"suggestions": [
    {"title": "Compare with Venice", "description": "Ask how Venice compares.",
     "detailedSuggestion": "How does Venice compare with Hamburg for bridges?"},
    {"title": "Oldest bridge", "detailedSuggestion": "Which is the oldest bridge in Hamburg?"},
    {"title": "Walking tour", "description": "Plan a walk.", "detailedSuggestion": "Plan a bridge walking tour."},
]}


@pytest.fixture(scope="module")
def openai_server(vendor, django_db_setup, django_db_blocker) -> Iterator[LiveServer]:
    # A short timeout, so the test of a vendor that never answers ends soon; a short whole-call deadline,
    # so does the one of a vendor that trickles its answer (providers/deadline.py).
    with openai_live_server("assist-openai", vendor.base_url, VENDOR_KEY, OPENAI_MODEL="fake-default",
                       OPENAI_TIMEOUT="2", MODEL_CALL_DEADLINE="3") as server:
        yield server


@pytest.fixture
def api(openai_server, api_key) -> Api:
    return Api(openai_server.url, api_key)


def test_the_name_is_the_models_title_from_one_plain_call(api, fake, chat):
    thread, _ = chat
    fake.script(Text(['"Bridges of ', 'Hamburg."\n']))

    response = generate_name(api, thread.id)

    assert response.status_code == 200, response.text
    assert response.json()["name"] == "Bridges of Hamburg"
    [request] = fake.requests
    assert not request.body.get("stream")
    assert not {"response_format", "tools"} & set(request.body)
    # Every call of a project that sets no output cap asks for the server's default one (safe defaults).
    assert request.body["max_tokens"] == django_settings.DEFAULT_MAX_OUTPUT_TOKENS
    assert request.body["model"] == "fake-default"
    assert request.api_key == VENDOR_KEY
    system, conversation = request.body["messages"]
    assert system["role"] == "system" and "title" in system["content"]
    assert "User: Which city has the most bridges?" in conversation["content"]
    assert "Assistant: Hamburg has more bridges" in conversation["content"]


def test_a_long_title_is_cut_to_sixty_characters_at_a_word(api, fake, chat):
    thread, _ = chat
    fake.script(Text("Title: " + "Hamburg bridges " * 10))

    name = generate_name(api, thread.id).json()["name"]

    assert len(name) <= 60
    # The next word would make it 63 characters.
    assert name == "Hamburg bridges Hamburg bridges Hamburg bridges Hamburg"


def test_an_empty_title_is_a_bad_gateway(api, fake, chat):
    thread, _ = chat
    fake.script(Text("  \n "))

    assert_problem(generate_name(api, thread.id), 502, "LLM_SERVER_ERROR")


def test_suggestions_are_the_models_json_in_its_order(api, fake, chat):
    thread, answer = chat
    # Compatible servers that ignore JSON mode often fence the JSON as Markdown; that is read too.
    fake.script(Text(["```json\n", json.dumps(IDEAS)[:30], json.dumps(IDEAS)[30:], "\n```"]))

    response = generate(api, thread.id, answer.id, maxSuggestions=2, availableComponents=[DATA_CARD])

    assert response.status_code == 200, response.text
    made = response.json()["suggestions"]
    assert [s["title"] for s in made] == ["Compare with Venice", "Oldest bridge"]
    assert made[0]["description"] == "Ask how Venice compares."
    # With no description the detailed suggestion stands in (the SDK calls one an alias of the other).
    assert made[1]["description"] == made[1]["detailedSuggestion"] == "Which is the oldest bridge in Hamburg?"
    [request] = fake.requests
    assert request.body["response_format"] == {"type": "json_object"}
    system, conversation = request.body["messages"]
    assert "JSON" in system["content"] and "at most 2 suggestions" in system["content"]
    assert "- DataCard: A card with one figure and its label." in system["content"]
    assert conversation["content"].endswith("Assistant: Hamburg has more bridges than Venice and Amsterdam.")


def test_a_bare_array_with_snake_case_fields_is_read_too(api, fake, chat):
    thread, answer = chat
    fake.script(Text(json.dumps([{"title": "Oldest bridge", "detailed_suggestion": "Which bridge is oldest?"}])))

    response = generate(api, thread.id, answer.id)

    assert response.status_code == 200, response.text
    [made] = response.json()["suggestions"]
    assert (made["title"], made["detailedSuggestion"]) == ("Oldest bridge", "Which bridge is oldest?")


def test_a_reply_that_is_not_the_json_asked_for_is_asked_again_once(api, fake, chat):
    thread, answer = chat
    fake.script(Text("Sure! Here are some ideas: compare, walk."), Text(json.dumps(IDEAS)))

    response = generate(api, thread.id, answer.id)

    assert response.status_code == 200, response.text
    assert len(response.json()["suggestions"]) == 3
    first, second = fake.requests
    # The second request is the first plus the bad reply and a word on what was wrong with it.
    assert second.body["messages"][:2] == first.body["messages"]
    assert second.body["messages"][2] == {"role": "assistant", "content": "Sure! Here are some ideas: compare, walk."}
    assert second.body["messages"][3]["role"] == "user" and "JSON" in second.body["messages"][3]["content"]
    assert second.body["response_format"] == {"type": "json_object"}


def test_two_replies_that_do_not_validate_are_a_bad_gateway_and_keep_the_earlier_ones(api, fake, chat):
    thread, answer = chat
    fake.script(Text(json.dumps(IDEAS)))
    kept = generate(api, thread.id, answer.id).json()["suggestions"]
    fake.script(Text("not json"), Text(json.dumps({"suggestions": [{"title": "No detail"}]})))

    body = assert_problem(generate(api, thread.id, answer.id), 502, "LLM_SERVER_ERROR")

    assert body["isRetryable"] is True
    assert len(fake.requests) == 3
    assert api.get(v1_path(thread.id, answer.id)).json()["suggestions"] == kept
    assert "No detail" not in json.dumps(body)


@pytest.mark.parametrize(("reply", "status", "code", "retryable"), [
    (HTTPError(429, retry_after=7), 429, "LLM_RATE_LIMITED", True),
    (HTTPError(401, message=f"Incorrect API key provided: {VENDOR_KEY}"), 502, "LLM_CLIENT_ERROR", False),
    (HTTPError(400), 502, "LLM_CLIENT_ERROR", False),
    (HTTPError(503), 502, "LLM_SERVER_ERROR", True),
    (Stall(seconds=30), 502, "LLM_SERVER_ERROR", True),
    # One space of the body every 0.5 s resets the 2 s per-read timeout; the whole-call deadline ends it.
    (Trickle(every=0.5), 502, "LLM_SERVER_ERROR", True),
])
def test_model_errors_are_the_run_codes_as_problems(api, fake, chat, reply, status, code, retryable):
    thread, answer = chat
    fake.script(reply)
    name = generate_name(api, thread.id)
    fake.script(reply)
    ideas = generate(api, thread.id, answer.id)

    for response in (name, ideas):
        body = assert_problem(response, status, code)
        assert body["isRetryable"] is retryable
        # The SDKs retry 5xx answers unless told not to.
        assert response.headers.get("x-should-retry") == (None if retryable else "false")
        assert VENDOR_KEY not in response.text and "Fake upstream" not in response.text
        if isinstance(reply, (Stall, Trickle)):
            assert body["detail"] == "The model provider did not answer in time."
    if status == 429:
        assert name.headers["Retry-After"] == "7"
        assert ideas.json()["retryAfter"] == 7
