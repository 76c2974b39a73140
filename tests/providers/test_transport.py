"""The model transport's connection faults (providers/aiohttp_transport.py), on both providers through
their real SDK clients: a pooled connection the server closed is not an error, a refused or reset
connection is "could not be reached" (never a timeout) and is not sent twice."""
from __future__ import annotations

import asyncio
import socket

import orjson
import pytest

from providers.anthropic_provider import AnthropicProvider
from providers.base import ModelError, ModelRequest, StepEnd, TextDelta
from providers.openai_provider import OpenAIProvider
from tests.support.keepalive_http import KeepAliveServer

HELLO = ModelRequest(messages=[{"role": "user", "content": "Hello"}])


def _sse(*events: dict | bytes) -> bytes:
    return b"".join(b"data: %b\n\n" % (e if isinstance(e, bytes) else orjson.dumps(e)) for e in events)


ANSWERS = {
    "openai": _sse({"choices": [{"index": 0, "delta": {"content": "Hi"}}]},
                   {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}, b"[DONE]"),
    "anthropic": _sse({"type": "message_start", "message": {"usage": {"input_tokens": 1, "output_tokens": 0}}},
                      {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                      {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
                      {"type": "content_block_stop", "index": 0},
                      {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
                      {"type": "message_stop"}),
}


def provider(name: str, base_url: str):
    if name == "openai":
        return OpenAIProvider(api_key="k", base_url=base_url, default_model="m", timeout=5)
    return AnthropicProvider(api_key="k", base_url=base_url.removesuffix("/v1"), default_model="m", timeout=5)


async def _stream(model) -> list:
    return [delta async for delta in model.stream(HELLO)]


async def _error(model) -> ModelError:
    with pytest.raises(ModelError) as caught:
        await _stream(model)
    return caught.value


@pytest.fixture
def server(request):
    servers: list[KeepAliveServer] = []

    def make(**kwargs) -> KeepAliveServer:
        servers.append(KeepAliveServer(**kwargs))
        return servers[-1]
    yield make
    for each in servers:
        each.close()


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_a_pooled_connection_the_server_closed_is_not_an_error(server, name):
    # Each connection answers once, then closes on the next request without answering: what a
    # server whose keep-alive ran out as the request arrived does.
    upstream = server(body=ANSWERS[name], answers=1, after="close")
    model = provider(name, upstream.base_url)

    async def two_steps() -> tuple[list, list]:
        return await _stream(model), await _stream(model)
    first, second = asyncio.run(two_steps())

    assert first[0] == second[0] == TextDelta("Hi") and isinstance(second[-1], StepEnd)
    # The second step went out on the pooled connection, found it closed, and went again on a new one.
    assert upstream.dropped == [(1, 2)]
    assert upstream.requests == [(1, 1), (1, 2), (2, 1)] and upstream.connections == 2


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_a_reset_connection_is_unreachable_and_not_sent_again(server, name):
    upstream = server(body=ANSWERS[name], answers=0, after="reset")

    error = asyncio.run(_error(provider(name, upstream.base_url)))

    assert (error.code, error.retryable, error.message) == (
        "LLM_SERVER_ERROR", True, "The model provider could not be reached.")
    assert upstream.requests == [(1, 1)]  # a fresh connection's failure is not retried


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_a_refused_connection_is_unreachable_not_a_timeout(name):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed without listening: connections to it are refused

    error = asyncio.run(_error(provider(name, f"http://127.0.0.1:{port}/v1")))

    assert (error.code, error.retryable, error.message) == (
        "LLM_SERVER_ERROR", True, "The model provider could not be reached.")


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_a_proxy_named_in_the_environment_is_used(server, name, monkeypatch):
    # A custom transport passed as `transport=` would make httpx2 ignore the environment's proxies.
    proxy = server(body=ANSWERS[name], answers=1)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens: only the proxy can answer
    for variable in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy.base_url.removesuffix("/v1"))

    deltas = asyncio.run(_stream(provider(name, f"http://127.0.0.1:{port}/v1")))

    assert deltas[0] == TextDelta("Hi") and proxy.requests == [(1, 1)]
