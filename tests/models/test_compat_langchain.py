"""LangChain's OpenAI chat model (`langchain-openai`) on the gateway, as its README writes it: structured
output by JSON schema and by function calling against both fake vendors, and the Responses API
(`use_responses_api=True`)."""
from __future__ import annotations

import pytest
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from tests.models.conftest import vendor_projects
from tests.support.fake_openai import Text, ToolCall, ToolCalls

pytestmark = pytest.mark.django_db(transaction=True)


class Weather(BaseModel):
    city: str
    celsius: int


@pytest.fixture
def keys(tmp_path, models_url, oai, ant) -> dict[str, str]:
    from projects.models import ApiKey, Project

    return {name: ApiKey.generate(Project.objects.get(name=name), "tests")[1]
            for name in vendor_projects(tmp_path, oai, ant, "lc")}


def chat_model(models_url: str, key: str, model: str, **options) -> ChatOpenAI:
    return ChatOpenAI(model=model, base_url=f"{models_url}/api", api_key=key, max_retries=0, **options)


@pytest.mark.parametrize(("project", "model", "vendor"), [("lc-openai", "gpt-fake", "oai"),
                                                          ("lc-anthropic", "claude-fake", "ant")])
def test_with_structured_output_by_json_schema(keys, models_url, request, project, model, vendor):
    fake = request.getfixturevalue(vendor)
    fake.script(Text(['{"city": "Oslo", ', '"celsius": 3}']))
    structured = chat_model(models_url, keys[project], model).with_structured_output(Weather, method="json_schema")

    assert structured.invoke("The weather in Oslo?") == Weather(city="Oslo", celsius=3)
    sent = fake.requests[0].body
    if vendor == "oai":
        assert sent["response_format"]["json_schema"]["name"] == "Weather"
    else:
        assert sent["output_config"]["format"]["type"] == "json_schema"


@pytest.mark.parametrize(("project", "model", "vendor"), [("lc-openai", "gpt-fake", "oai"),
                                                          ("lc-anthropic", "claude-fake", "ant")])
def test_with_structured_output_by_function_calling(keys, models_url, request, project, model, vendor):
    fake = request.getfixturevalue(vendor)
    fake.script(ToolCalls([ToolCall("Weather", ['{"city": "Oslo",', ' "celsius": 3}'])]))
    structured = chat_model(models_url, keys[project], model).with_structured_output(
        Weather, method="function_calling")

    assert structured.invoke("The weather in Oslo?") == Weather(city="Oslo", celsius=3)
    sent = fake.requests[0].body
    assert [tool.get("name") or tool["function"]["name"] for tool in sent["tools"]] == ["Weather"]


def test_the_responses_api_through_langchain(keys, models_url, oai):
    oai.script(Text(["Hello from ", "the Responses API."]))
    model = chat_model(models_url, keys["lc-openai"], "gpt-fake", use_responses_api=True)

    answer = model.invoke("Say hello")

    assert answer.text == "Hello from the Responses API."
    assert answer.usage_metadata["output_tokens"] > 0
