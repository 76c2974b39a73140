"""The official `openai` Python client against the gateway on the built-in offline model."""
from __future__ import annotations

import json
import time

import openai
import pytest

from tests.gateway.wire import openai_client, weather_tool
from tests.support.live import LiveServer

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_streams_text_to_the_official_client(live_server_url, api_key):
    client = openai_client(live_server_url, api_key)

    chunks = list(client.chat.completions.create(
        model="offline", messages=[{"role": "user", "content": "hello gateway"}], stream=True))

    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
    assert text.startswith("(offline model) You said: hello gateway")
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert {chunk.id for chunk in chunks} == {chunks[0].id}
    assert {chunk.model for chunk in chunks} == {"offline"}


def test_it_uses_the_default_model_when_none_is_named(live_server_url, api_key):
    client = openai_client(live_server_url, api_key)

    # The SDK insists on a model argument; an empty body field is what other front ends send.
    completion = client.chat.completions.create(model="offline", messages=[{"role": "user", "content": "hi"}])
    assert completion.model == "offline"
    raw = client.post("/chat/completions", body={"messages": [{"role": "user", "content": "hi"}]},
                      cast_to=openai.types.chat.ChatCompletion)
    assert raw.model == "offline"
    assert raw.choices[0].message.content.startswith("(offline model) You said: hi")


def test_the_sdk_reassembles_streamed_tool_calls(live_server_url, api_key):
    client = openai_client(live_server_url, api_key)

    with client.chat.completions.stream(
        model="offline",
        messages=[{"role": "user", "content": 'Please use get_weather {"city": "Paris, France"}'}],
        tools=[weather_tool()],
    ) as stream:
        completion = stream.get_final_completion()

    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    [call] = choice.message.tool_calls
    assert call.id and call.type == "function"
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris, France"}


def test_it_answers_without_streaming(live_server_url, api_key):
    client = openai_client(live_server_url, api_key)

    completion = client.chat.completions.create(
        model="offline", messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "ping"}])

    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-")
    assert completion.choices[0].message.role == "assistant"
    assert completion.choices[0].message.content.startswith("(offline model) You said: ping")
    assert completion.choices[0].finish_reason == "stop"
    usage = completion.usage
    assert usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_it_answers_tool_calls_without_streaming(live_server_url, api_key):
    client = openai_client(live_server_url, api_key)

    completion = client.chat.completions.create(
        model="offline", tools=[weather_tool()],
        messages=[{"role": "user", "content": 'get_weather {"city": "Oslo"}'}])

    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert [(c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls] == [
        ("get_weather", {"city": "Oslo"})]


def test_it_sends_a_usage_chunk_when_asked(live_server_url, api_key):
    client = openai_client(live_server_url, api_key)

    chunks = list(client.chat.completions.create(
        model="offline", messages=[{"role": "user", "content": "count me"}], stream=True,
        stream_options={"include_usage": True}))

    assert chunks[-1].choices == []
    assert chunks[-1].usage.completion_tokens > 0
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-2].usage == chunks[-1].usage


def test_it_rejects_an_unknown_key(live_server_url, api_key):
    client = openai_client(live_server_url, "tk_not-a-real-key")

    with pytest.raises(openai.AuthenticationError) as caught:
        client.chat.completions.create(model="offline", messages=[{"role": "user", "content": "hi"}])

    assert caught.value.status_code == 401
    assert caught.value.code == "invalid_api_key"


def test_it_rejects_a_revoked_key(live_server_url, project):
    from projects.models import ApiKey

    row, raw = ApiKey.generate(project, "to-revoke")
    ApiKey.objects.filter(pk=row.pk).update(revoked=True)

    with pytest.raises(openai.AuthenticationError):
        openai_client(live_server_url, raw).chat.completions.create(
            model="offline", messages=[{"role": "user", "content": "hi"}])


def test_it_rejects_an_unknown_model_as_a_bad_request(live_server_url, api_key):
    client = openai_client(live_server_url, api_key)

    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="gpt-9-ultra", messages=[{"role": "user", "content": "hi"}])

    assert caught.value.status_code == 400
    assert caught.value.code == "model_not_found"
    assert caught.value.param == "model"
    assert "offline" in caught.value.message


def test_it_refuses_a_request_body_over_the_size_limit(live_server_url, api_key):
    client = openai_client(live_server_url, api_key)

    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model="offline", messages=[{"role": "user", "content": "x" * 1_100_000}])

    assert caught.value.status_code == 413
    assert caught.value.body["code"] == "payload_too_large"


def test_a_model_failure_before_the_first_byte_is_a_bad_gateway_error(live_server_url, api_key):
    client = openai_client(live_server_url, api_key)

    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model="offline", messages=[{"role": "user", "content": "!fail now"}],
                                       stream=True)

    assert caught.value.status_code == 502
    assert caught.value.body["type"] == "server_error"


@pytest.fixture(scope="module")
def limited_server(django_db_setup, django_db_blocker):
    server = LiveServer("gateway-ratelimit", {"GATEWAY_RATE_LIMIT_PER_MINUTE": "2"})
    yield server
    server.stop()


def _calls_in_one_window(url: str, project, count: int) -> list[object] | None:
    """`count` calls with a fresh key; None when a minute boundary fell among them (the window restarted)."""
    from projects.models import ApiKey

    client = openai_client(url, ApiKey.generate(project, "limited")[1])
    window = int(time.time() // 60)
    outcomes: list[object] = []
    for _ in range(count):
        try:
            outcomes.append(client.chat.completions.create(
                model="offline", messages=[{"role": "user", "content": "hi"}]))
        except openai.RateLimitError as exc:
            outcomes.append(exc)
    return outcomes if int(time.time() // 60) == window else None


def test_it_limits_requests_per_key_per_minute(limited_server, project, other_project_key):
    outcomes = _calls_in_one_window(limited_server.url, project, 3) or _calls_in_one_window(
        limited_server.url, project, 3)

    assert outcomes is not None
    first, second, third = outcomes
    assert first.choices and second.choices
    assert isinstance(third, openai.RateLimitError)
    assert third.status_code == 429
    assert third.code == "rate_limit_exceeded"
    assert 1 <= int(third.response.headers["retry-after"]) <= 60
    # Another key has a count of its own.
    other = openai_client(limited_server.url, other_project_key)
    assert other.chat.completions.create(model="offline", messages=[{"role": "user", "content": "hi"}]).choices
