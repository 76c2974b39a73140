"""The `openai` provider against a scripted OpenAI-compatible server, through the real `openai` client."""
from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

import openai
import pytest

from providers.base import ModelError, ModelRequest, ModelTool, StepEnd, TextDelta, ToolCallDelta
from providers.openai_provider import OpenAIProvider, retry_after_seconds
from tests.support.batches import coarsens
from tests.support.fake_openai import (
    Drop,
    FakeOpenAI,
    HTTPError,
    Stall,
    StreamError,
    Text,
    ToolCall,
    ToolCalls,
)

API_KEY = "sk-test-DO-NOT-LEAK-4f9a2c"
HELLO = [{"role": "user", "content": "Hello"}]
WEATHER = ModelTool(name="get_weather", description="Weather for a city.",
                    parameters={"type": "object", "properties": {"city": {"type": "string"}}})


def make_provider(fake: FakeOpenAI, *, timeout: float = 5.0) -> OpenAIProvider:
    return OpenAIProvider(api_key=API_KEY, base_url=fake.base_url, default_model="fake-default",
                          timeout=timeout)


def collect(provider: OpenAIProvider, request: ModelRequest | None = None) -> list[Any]:
    async def run() -> list[Any]:
        return [delta async for delta in provider.stream(request or ModelRequest(messages=HELLO))]
    return asyncio.run(run())


def collect_until_error(provider: OpenAIProvider, request: ModelRequest | None = None
                        ) -> tuple[list[Any], ModelError]:
    seen: list[Any] = []

    async def run() -> ModelError:
        with pytest.raises(ModelError) as caught:
            async for delta in provider.stream(request or ModelRequest(messages=HELLO)):
                seen.append(delta)
        return caught.value
    error = asyncio.run(run())
    return seen, error


def calls_by_index(deltas: list[Any]) -> dict[int, list[ToolCallDelta]]:
    calls: dict[int, list[ToolCallDelta]] = {}
    for delta in deltas:
        if isinstance(delta, ToolCallDelta):
            calls.setdefault(delta.index, []).append(delta)
    return calls


# --- successful steps ---

def test_it_yields_text_deltas_in_order_then_step_end(fake_openai):
    fake_openai.script(Text(["Hel", "lo", " wor", "ld"],
                            usage={"prompt_tokens": 7, "completion_tokens": 4, "total_tokens": 11}))

    deltas = collect(make_provider(fake_openai))

    # Pieces read together come as one delta (providers/batching.py).
    assert all(isinstance(d, TextDelta) for d in deltas[:-1])
    assert coarsens([d.text for d in deltas[:-1]], ["Hel", "lo", " wor", "ld"])
    assert deltas[-1] == StepEnd("stop", {"prompt_tokens": 7, "completion_tokens": 4, "total_tokens": 11})


def test_it_asks_for_a_stream_with_usage(fake_openai):
    collect(make_provider(fake_openai))

    body = fake_openai.last_request.body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == HELLO


def test_it_passes_the_finish_reason_through(fake_openai):
    fake_openai.script(Text(["cut"], finish_reason="length"))

    assert collect(make_provider(fake_openai))[-1].finish_reason == "length"


def test_it_reassembles_tool_call_arguments_split_mid_token(fake_openai):
    fragments = ['{"ci', 'ty": "Pa', 'ris", "un', 'its": "cel', 'sius"}']
    fake_openai.script(ToolCalls([ToolCall("get_weather", fragments, id="call_abc")]))

    deltas = collect(make_provider(fake_openai), ModelRequest(messages=HELLO, tools=[WEATHER]))

    calls = calls_by_index(deltas)
    assert list(calls) == [0]
    first, *rest = calls[0]
    assert (first.id, first.name) == ("call_abc", "get_weather")
    assert all(d.id is None and d.name is None for d in rest)
    assert coarsens([d.arguments for d in calls[0] if d.arguments], fragments)
    assert json.loads("".join(d.arguments for d in calls[0])) == {"city": "Paris", "units": "celsius"}
    assert deltas[-1] == StepEnd("tool_calls", deltas[-1].usage)


def test_it_streams_several_interleaved_tool_calls_after_text(fake_openai):
    fake_openai.script(ToolCalls(
        [ToolCall("get_weather", ['{"city":', ' "Oslo"}'], id="call_1"),
         ToolCall("get_time", ['{"tz": "Eu', 'rope/Oslo"}'], id="call_2")],
        text=["Checking", " both."], interleave=True))

    deltas = collect(make_provider(fake_openai), ModelRequest(messages=HELLO, tools=[WEATHER]))

    assert coarsens([d.text for d in deltas if isinstance(d, TextDelta)], ["Checking", " both."])
    calls = calls_by_index(deltas)
    assert [(calls[i][0].id, calls[i][0].name) for i in (0, 1)] == [("call_1", "get_weather"),
                                                                   ("call_2", "get_time")]
    assert json.loads("".join(d.arguments for d in calls[0])) == {"city": "Oslo"}
    assert json.loads("".join(d.arguments for d in calls[1])) == {"tz": "Europe/Oslo"}
    assert isinstance(deltas[-1], StepEnd) and deltas[-1].finish_reason == "tool_calls"


def test_it_passes_id_and_name_once_when_the_server_repeats_them(fake_openai):
    fake_openai.script(ToolCalls([ToolCall("get_weather", ['{"city"', ': "Lima"}'], id="call_9")],
                                 repeat_head=True))

    calls = calls_by_index(collect(make_provider(fake_openai), ModelRequest(messages=HELLO, tools=[WEATHER])))

    assert (calls[0][0].id, calls[0][0].name) == ("call_9", "get_weather")
    assert all((d.id, d.name) == (None, None) for d in calls[0][1:])
    assert "".join(d.arguments for d in calls[0]) == '{"city": "Lima"}'


# --- request parameters ---

def test_it_sends_model_limits_tools_and_key(fake_openai):
    request = ModelRequest(messages=HELLO, tools=[WEATHER], tool_choice="auto", model="gpt-special",
                           max_tokens=123, temperature=0.25)

    collect(make_provider(fake_openai), request)

    received = fake_openai.last_request
    assert received.path == "/v1/chat/completions"
    assert received.api_key == API_KEY
    assert received.body["model"] == "gpt-special"
    assert received.body["max_tokens"] == 123
    assert received.body["temperature"] == 0.25
    assert received.body["tools"] == [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather for a city.", "parameters": WEATHER.parameters}}]


def test_it_uses_the_default_model_and_leaves_unset_limits_out(fake_openai):
    collect(make_provider(fake_openai))

    body = fake_openai.last_request.body
    assert body["model"] == "fake-default"
    assert not {"max_tokens", "temperature", "tools", "tool_choice"} & body.keys()


@pytest.mark.parametrize(("tool_choice", "sent"), [
    ("auto", "auto"),
    ("required", "required"),
    ("none", "none"),
    ({"name": "get_weather"}, {"type": "function", "function": {"name": "get_weather"}}),
    ({"type": "function", "function": {"name": "get_weather"}},
     {"type": "function", "function": {"name": "get_weather"}}),
])
def test_it_maps_tool_choice(fake_openai, tool_choice, sent):
    collect(make_provider(fake_openai), ModelRequest(messages=HELLO, tools=[WEATHER], tool_choice=tool_choice))

    assert fake_openai.last_request.body["tool_choice"] == sent


def test_it_leaves_tool_choice_out_without_tools(fake_openai):
    collect(make_provider(fake_openai), ModelRequest(messages=HELLO, tool_choice="auto"))

    assert "tool_choice" not in fake_openai.last_request.body


# --- errors ---

def test_a_429_is_rate_limited_and_retryable_with_retry_after(fake_openai):
    fake_openai.script(HTTPError(429, retry_after=7))

    deltas, error = collect_until_error(make_provider(fake_openai))

    assert deltas == []
    assert (error.code, error.retryable, error.status, error.retry_after) == ("LLM_RATE_LIMITED", True, 429, 7.0)
    assert error.category == "server_error"
    assert error.message == "The model provider is rate limiting requests."


def test_a_429_without_retry_after_has_none(fake_openai):
    fake_openai.script(HTTPError(429))

    _, error = collect_until_error(make_provider(fake_openai))

    assert (error.code, error.retry_after) == ("LLM_RATE_LIMITED", None)


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_other_4xx_are_client_errors_not_retryable(fake_openai, status):
    fake_openai.script(HTTPError(status))

    _, error = collect_until_error(make_provider(fake_openai))

    assert (error.code, error.retryable, error.status, error.category) == (
        "LLM_CLIENT_ERROR", False, status, "client_error")


@pytest.mark.parametrize("status", [500, 502, 503])
def test_5xx_are_retryable_server_errors(fake_openai, status):
    fake_openai.script(HTTPError(status))

    _, error = collect_until_error(make_provider(fake_openai))

    assert (error.code, error.retryable, error.status) == ("LLM_SERVER_ERROR", True, status)


def test_a_stream_dropped_midway_is_a_retryable_server_error_after_the_deltas_so_far(fake_openai):
    fake_openai.script(Drop(after=["Par", "tial"]))

    deltas, error = collect_until_error(make_provider(fake_openai))

    assert all(isinstance(d, TextDelta) for d in deltas) and coarsens([d.text for d in deltas], ["Par", "tial"])
    assert (error.code, error.retryable) == ("LLM_SERVER_ERROR", True)
    assert error.message == "The connection to the model provider was lost."


def test_a_stream_that_ends_without_a_finish_reason_is_a_server_error(fake_openai):
    fake_openai.script(Text(["Hi"], finish_reason=None))

    deltas, error = collect_until_error(make_provider(fake_openai))

    assert deltas == [TextDelta("Hi")]
    assert (error.code, error.retryable) == ("LLM_SERVER_ERROR", True)


def test_an_error_event_inside_the_stream_is_a_server_error(fake_openai):
    fake_openai.script(StreamError(after=["So"]))

    deltas, error = collect_until_error(make_provider(fake_openai))

    assert deltas == [TextDelta("So")]
    assert (error.code, error.retryable) == ("LLM_SERVER_ERROR", True)


def test_a_stalled_stream_times_out_as_a_server_error(fake_openai):
    fake_openai.script(Stall(after=["Thinking"], seconds=30))
    started = time.monotonic()

    deltas, error = collect_until_error(make_provider(fake_openai, timeout=0.3))

    assert time.monotonic() - started < 3
    assert deltas == [TextDelta("Thinking")]
    assert (error.code, error.retryable, error.message) == (
        "LLM_SERVER_ERROR", True, "The model provider did not answer in time.")


def test_an_unreachable_provider_is_a_server_error():
    with FakeOpenAI() as fake:
        provider = make_provider(fake)
    # The server is stopped: its port now refuses connections.

    _, error = collect_until_error(provider)

    assert (error.code, error.retryable, error.message) == (
        "LLM_SERVER_ERROR", True, "The model provider could not be reached.")


@pytest.mark.parametrize("reply", [
    HTTPError(429, message=f"Rate limit for key {API_KEY}", retry_after=1),
    HTTPError(400, message=f"Bad request with key {API_KEY}"),
    HTTPError(401, message=f"Incorrect API key provided: {API_KEY}"),
    HTTPError(500, message=f"Internal trouble, key {API_KEY}"),
    StreamError(after=["x"], message=f"Upstream broke, key {API_KEY}"),
    Drop(after=["x"]),
    Stall(after=["x"], seconds=30),
], ids=["429", "400", "401", "500", "stream-error", "drop", "stall"])
def test_errors_never_carry_the_key_or_the_upstream_text(fake_openai, reply):
    fake_openai.script(reply)

    _, error = collect_until_error(make_provider(fake_openai, timeout=0.3))

    assert fake_openai.last_request.api_key == API_KEY
    for shown in (str(error), repr(error), error.message):
        assert API_KEY not in shown
        assert "key" not in shown.lower()


# --- cancellation ---

async def _stop_a_stalled_stream(fake: FakeOpenAI, how: str) -> float:
    """Start a stalled stream, take its first delta, stop it by `how`.

    Returns the seconds from stopping until the fake server saw the client go, measured while the
    event loop is still alive (closing the loop would drop the connection anyway).
    """
    fake.script(Stall(after=["Thinking"], seconds=30))
    stream = make_provider(fake).stream(ModelRequest(messages=HELLO))
    if how == "aclose":
        assert await anext(stream) == TextDelta("Thinking")
        started = time.monotonic()
        await stream.aclose()
    else:
        got_first = asyncio.Event()

        async def consume() -> None:
            async for _ in stream:
                got_first.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(got_first.wait(), timeout=5)
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert await asyncio.to_thread(fake.last_request.disconnected.wait, 2)
    return time.monotonic() - started


@pytest.mark.parametrize("how", ["aclose", "cancel"])
def test_stopping_a_stalled_stream_aborts_the_request_at_once(fake_openai, how):
    # Far below the 30 s stall: the request is aborted, not waited out (a bound, not a speed target).
    assert asyncio.run(_stop_a_stalled_stream(fake_openai, how)) < 5


# --- small pure pieces ---

def test_retry_after_reads_milliseconds_seconds_and_dates():
    assert retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    soon = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 < retry_after_seconds({"retry-after": soon}) <= 30
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_an_unknown_tool_choice_is_a_programming_error(fake_openai):
    with pytest.raises(ValueError):
        collect(make_provider(fake_openai), ModelRequest(messages=HELLO, tools=[WEATHER], tool_choice="any"))


# --- the fake server itself ---

def test_fake_answers_without_streaming_and_defaults_when_the_script_is_empty(fake_openai):
    fake_openai.script(ToolCalls([ToolCall("get_weather", ['{"city"', ': "Rome"}'])], text="Sure."))
    client = openai.OpenAI(api_key=API_KEY, base_url=fake_openai.base_url, max_retries=0)

    scripted = client.chat.completions.create(model="m", messages=HELLO)
    default = client.chat.completions.create(model="m", messages=HELLO)

    message = scripted.choices[0].message
    assert message.content == "Sure."
    assert message.tool_calls[0].function.arguments == '{"city": "Rome"}'
    assert scripted.choices[0].finish_reason == "tool_calls"
    assert default.choices[0].message.content == "Hello from the fake model."
    assert len(fake_openai.requests) == 2 and fake_openai.pending == 0


def test_fake_stop_ends_a_stall_promptly():
    fake = FakeOpenAI().start()
    fake.script(Stall(seconds=30))
    body = json.dumps({"model": "m", "messages": HELLO, "stream": True}).encode()
    with socket.create_connection(("127.0.0.1", fake.port), timeout=5) as conn:
        conn.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        assert conn.recv(4096).startswith(b"HTTP/1.1 200")
        started = time.monotonic()
        fake.stop()
        while conn.recv(4096):
            pass  # The server closes the connection once the stall ends.
        assert time.monotonic() - started < 5  # not the 30 s stall
