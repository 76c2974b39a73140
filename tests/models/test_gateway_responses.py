"""`POST /api/responses`: OpenAI's Responses API on the gateway, driven with the official `openai`
package (`client.responses.create` and `client.responses.stream`) against the offline model and both
fake vendors, through the same checks and metered model call as the chat completions."""
from __future__ import annotations

import json

import openai
import pytest
from pydantic import BaseModel

from tests.models.conftest import vendor_projects
from tests.models.test_gateway_models import client_for
from tests.support.fake_openai import HTTPError, Text, ToolCall, ToolCalls

pytestmark = pytest.mark.django_db(transaction=True)

WEATHER = {"type": "function", "name": "get_weather", "description": "Weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


@pytest.fixture
def clients(tmp_path, models_url, oai, ant) -> tuple[openai.OpenAI, openai.OpenAI]:
    gpt, claude = vendor_projects(tmp_path, oai, ant, "resp")
    return client_for(models_url, gpt), client_for(models_url, claude)


def offline_client(api) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{api.base_url}/api", api_key=api.session.headers["x-api-key"], max_retries=0)


def test_create_answers_text_with_usage_from_the_offline_model(api):
    response = offline_client(api).responses.create(model="offline", input="Hello responses")

    assert response.status == "completed" and response.object == "response"
    assert "You said: Hello responses" in response.output_text
    assert response.output[0].type == "message" and response.output[0].role == "assistant"
    assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens


def test_stream_sends_the_responses_events_and_a_final_response(api):
    with offline_client(api).responses.stream(model="offline", input="Stream me") as stream:
        events = list(stream)
        final = stream.get_final_response()

    types = [event.type for event in events]
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    assert "response.output_text.delta" in types and "response.output_text.done" in types
    deltas = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert final.output_text == deltas and "You said: Stream me" in deltas
    assert [event.sequence_number for event in events] == list(range(len(events)))


def test_a_function_call_and_its_output_turn_reach_openai_as_a_tool_loop(clients, oai):
    gpt, _ = clients
    oai.script(ToolCalls([ToolCall("get_weather", ['{"city": ', '"Oslo"}'], id="call_w1")]))

    first = gpt.responses.create(model="gpt-fake", instructions="Be brief.", input="Weather in Oslo?",
                                 tools=[WEATHER])

    call = first.output[0]
    assert call.type == "function_call" and call.name == "get_weather" and call.call_id == "call_w1"
    assert json.loads(call.arguments) == {"city": "Oslo"}
    oai.script(Text("Rain in Oslo."))
    second = gpt.responses.create(model="gpt-fake", instructions="Be brief.", tools=[WEATHER], input=[
        {"role": "user", "content": "Weather in Oslo?"},
        {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "rain"}])

    assert second.output_text == "Rain in Oslo."
    sent = oai.requests[1].body
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_w1", "type": "function", "function": {
            "name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "call_w1", "content": "rain"}]
    assert sent["tools"][0]["function"]["name"] == "get_weather"


def test_a_streamed_function_call_arrives_as_argument_deltas(clients, oai):
    gpt, _ = clients
    oai.script(ToolCalls([ToolCall("get_weather", ['{"city": ', '"Oslo"}'])]))

    with gpt.responses.stream(model="gpt-fake", input="Weather?", tools=[WEATHER]) as stream:
        types = [event.type for event in stream]
        final = stream.get_final_response()

    assert "response.function_call_arguments.delta" in types and "response.function_call_arguments.done" in types
    assert final.output[0].type == "function_call" and json.loads(final.output[0].arguments) == {"city": "Oslo"}


def test_anthropic_answers_behind_the_responses_api_with_instructions_as_system(clients, ant):
    _, claude = clients
    ant.script(Text(["Hi from ", "Claude"]))

    with claude.responses.stream(model="claude-fake", instructions="Be brief.", input="hi",
                                 max_output_tokens=300) as stream:
        final = stream.get_final_response()

    assert final.output_text == "Hi from Claude"
    sent = ant.requests[0].body
    assert sent["system"] == "Be brief." and sent["max_tokens"] == 300


def test_structured_output_through_text_format(clients, oai):
    class City(BaseModel):
        name: str

    gpt, _ = clients
    oai.script(Text('{"name": "Oslo"}'))

    parsed = gpt.responses.parse(model="gpt-fake", input="A city?", text_format=City)

    assert parsed.output_parsed == City(name="Oslo")
    assert oai.requests[0].body["response_format"]["json_schema"]["name"] == "City"


def test_previous_response_id_is_a_400_saying_nothing_is_stored(api):
    with pytest.raises(openai.BadRequestError) as refused:
        offline_client(api).responses.create(model="offline", input="again", previous_response_id="resp_1")

    assert refused.value.param == "previous_response_id" and "store" in refused.value.message


def test_errors_are_in_openais_shape(clients, oai, api):
    with pytest.raises(openai.BadRequestError) as unknown:
        offline_client(api).responses.create(model="nope", input="hi")
    assert unknown.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as bad_tool:
        offline_client(api).responses.create(model="offline", input="hi", tools=[{"type": "web_search"}])
    assert bad_tool.value.param == "tools[0]"

    gpt, _ = clients
    oai.script(HTTPError(429, retry_after=3))
    with pytest.raises(openai.RateLimitError):
        gpt.responses.create(model="gpt-fake", input="hi")
