"""The gateway forwards the chat-completions parameters that change the answer's shape to the
project's provider, as that provider names them, and refuses (400, naming it) one the provider cannot
honour; /api/models says what each model supports. Driven with the official `openai` package's
`beta.chat.completions.parse()` and a pydantic model against both fake vendors (docs/clients.md)."""
from __future__ import annotations

import openai
import pytest
from pydantic import BaseModel

from tests.models.conftest import vendor_projects
from tests.models.test_gateway_models import client_for
from tests.support.fake_openai import Text

pytestmark = pytest.mark.django_db(transaction=True)

ASK = [{"role": "user", "content": "The weather in Oslo, as JSON."}]


class Weather(BaseModel):
    city: str
    celsius: int


@pytest.fixture
def clients(tmp_path, models_url, oai, ant) -> tuple[openai.OpenAI, openai.OpenAI]:
    """Clients for two projects: one on the OpenAI fake, one on the Anthropic fake."""
    gpt, claude = vendor_projects(tmp_path, oai, ant, "params")
    return client_for(models_url, gpt), client_for(models_url, claude)


def test_parse_with_a_pydantic_model_sends_the_schema_and_parameters_to_openai(clients, oai):
    gpt, _ = clients
    oai.script(Text(['{"city": "Oslo", ', '"celsius": 3}']))

    completion = gpt.beta.chat.completions.parse(
        model="gpt-fake", messages=ASK, response_format=Weather, stop=["\n\n"], seed=7, top_p=0.5,
        presence_penalty=0.25, frequency_penalty=-0.5, reasoning_effort="low")

    assert completion.choices[0].message.parsed == Weather(city="Oslo", celsius=3)
    sent = oai.requests[0].body
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["name"] == "Weather"
    assert sent["response_format"]["json_schema"]["strict"] is True
    assert sent["response_format"]["json_schema"]["schema"]["required"] == ["city", "celsius"]
    assert {k: sent[k] for k in ("stop", "seed", "top_p", "presence_penalty", "frequency_penalty",
                                 "reasoning_effort")} == {
        "stop": ["\n\n"], "seed": 7, "top_p": 0.5, "presence_penalty": 0.25, "frequency_penalty": -0.5,
        "reasoning_effort": "low"}


def test_parse_with_a_pydantic_model_asks_anthropic_for_structured_output(clients, ant):
    _, claude = clients
    ant.script(Text(['{"city": "Oslo", "celsius": 3}']))

    completion = claude.beta.chat.completions.parse(
        model="claude-fake", messages=ASK, response_format=Weather, stop="END", top_p=0.5, max_tokens=500,
        reasoning_effort="medium")

    assert completion.choices[0].message.parsed == Weather(city="Oslo", celsius=3)
    sent = ant.requests[0].body
    assert sent["output_config"]["format"]["type"] == "json_schema"
    assert sent["output_config"]["format"]["schema"]["properties"].keys() == {"city", "celsius"}
    assert sent["stop_sequences"] == ["END"] and sent["top_p"] == 0.5
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert sent["max_tokens"] == 500 + 8192  # the answer's own 500 on top of the thinking budget
    assert not {"response_format", "stop", "reasoning_effort"} & set(sent)


@pytest.mark.parametrize("vendor", ["oai", "ant"])
def test_the_fakes_honour_stop_and_the_answer_ends_there(clients, vendor, request):
    client = clients[0] if vendor == "oai" else clients[1]
    request.getfixturevalue(vendor).script(Text(["one two ", "STOP three"]))

    answer = client.chat.completions.create(model="gpt-fake" if vendor == "oai" else "claude-fake",
                                            messages=ASK, stop="STOP")

    assert answer.choices[0].message.content == "one two "


def test_parallel_tool_calls_false_reaches_both_vendors(clients, oai, ant):
    gpt, claude = clients
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    oai.script(Text("ok"))
    ant.script(Text("ok"))

    gpt.chat.completions.create(model="gpt-fake", messages=ASK, tools=[tool], parallel_tool_calls=False)
    claude.chat.completions.create(model="claude-fake", messages=ASK, tools=[tool], parallel_tool_calls=False)

    assert oai.requests[0].body["parallel_tool_calls"] is False
    assert ant.requests[0].body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}


@pytest.mark.parametrize(("param", "value"), [("seed", 7), ("presence_penalty", 0.5), ("logprobs", True),
                                              ("response_format", {"type": "json_object"})])
def test_a_parameter_anthropic_cannot_honour_is_a_400_naming_it(clients, ant, param, value):
    _, claude = clients

    with pytest.raises(openai.BadRequestError) as refused:
        claude.chat.completions.create(model="claude-fake", messages=ASK, **{param: value})

    assert refused.value.code == "unsupported_parameter" and refused.value.param == param
    assert ant.requests == []  # refused before any vendor call


def test_the_offline_model_refuses_a_json_schema_rather_than_answering_prose(api):
    client = openai.OpenAI(base_url=f"{api.base_url}/api", api_key=api.session.headers["x-api-key"], max_retries=0)

    with pytest.raises(openai.BadRequestError) as refused:
        client.beta.chat.completions.parse(model="offline", messages=ASK, response_format=Weather)

    assert refused.value.param == "response_format"


def test_sampling_fields_sent_at_their_defaults_ask_for_nothing_and_are_not_refused(api):
    # Chat UIs send every field of their settings form; at its default none of them changes the answer.
    client = openai.OpenAI(base_url=f"{api.base_url}/api", api_key=api.session.headers["x-api-key"], max_retries=0)

    answer = client.chat.completions.create(model="offline", messages=ASK, top_p=1, presence_penalty=0,
                                            frequency_penalty=0, parallel_tool_calls=True, logprobs=False)

    assert answer.choices[0].message.content
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="offline", messages=ASK, top_p=0.5)
    assert refused.value.param == "top_p"


def test_a_badly_typed_parameter_is_a_400_naming_it(clients):
    gpt, _ = clients
    with pytest.raises(openai.BadRequestError) as refused:
        gpt.chat.completions.create(model="gpt-fake", messages=ASK, top_p=3)
    assert refused.value.param == "top_p"


def test_the_models_list_says_what_each_model_supports(clients):
    gpt, claude = clients
    openai_card = gpt.models.list().data[0].model_dump()
    anthropic_card = claude.models.list().data[0].model_dump()

    assert {"response_format", "seed", "stop", "parallel_tool_calls"} <= set(openai_card["supported_parameters"])
    assert "logprobs" not in openai_card["supported_parameters"]  # not returned by the gateway
    assert {"response_format", "stop", "top_p", "reasoning_effort"} <= set(anthropic_card["supported_parameters"])
    assert not {"seed", "presence_penalty", "logprobs"} & set(anthropic_card["supported_parameters"])
