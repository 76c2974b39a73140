"""A vendor call's total deadlines (providers/deadline.py), for both vendor providers through their real
SDKs against the fakes: a vendor that trickles (an SSE comment or a ping now and then, a body one
space at a time, text that never ends) is ended by its deadline with `LLM_SERVER_ERROR` "did not
answer in time" and its connection dropped, though every byte resets the client's per-read timeout;
a long answer that keeps coming is not cut. Outcomes are asserted, not times."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from providers.anthropic_provider import AnthropicProvider
from providers.base import ModelError, ModelRequest, StepEnd, TextDelta
from providers.deadline import MSG_TIMEOUT, Deadlines
from providers.openai_provider import OpenAIProvider
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import FakeOpenAI, Text, Trickle

HELLO = [{"role": "user", "content": "Hello"}]
# Far above any deadline of these tests: today's code (per-read timeouts only) fails by this guard
# instead of hanging; no assertion depends on it.
GUARD_SECONDS = 60
# Each trickled byte comes well within the client's per-read timeout (5 s).
EVERY = 0.2


@pytest.fixture(params=["openai", "anthropic"])
def vendor(request):
    fake_class = FakeOpenAI if request.param == "openai" else FakeAnthropic
    with fake_class() as fake:
        yield request.param, fake


def _provider(vendor, deadlines: Deadlines):
    name, fake = vendor
    provider_class = OpenAIProvider if name == "openai" else AnthropicProvider
    return provider_class(api_key="k", base_url=fake.base_url, default_model="m", timeout=5.0, deadlines=deadlines)


def _stream(provider) -> tuple[list[Any], ModelError | None]:
    seen: list[Any] = []

    async def read() -> None:
        async for delta in provider.stream(ModelRequest(messages=HELLO, max_tokens=100)):
            seen.append(delta)

    async def guarded() -> ModelError | None:
        try:
            await asyncio.wait_for(read(), GUARD_SECONDS)
        except ModelError as error:
            return error
        return None

    return seen, asyncio.run(guarded())


def _text(seen: list[Any]) -> str:
    return "".join(d.text for d in seen if isinstance(d, TextDelta))


def _assert_deadline(error: ModelError | None, fake) -> None:
    assert error is not None and error.code == "LLM_SERVER_ERROR" and error.message == MSG_TIMEOUT
    assert error.retryable and error.accepted  # a fallback may answer; the prompt sent is charged
    assert fake.requests[-1].disconnected.wait(timeout=10)  # the connection was dropped, not left open


def test_a_vendor_that_sends_only_comments_ends_by_the_first_delta_deadline(vendor):
    _, fake = vendor
    fake.script(Trickle(every=EVERY))
    seen, error = _stream(_provider(vendor, Deadlines(call=1.0, idle=30, stream=30)))
    assert seen == []
    _assert_deadline(error, fake)


def test_a_vendor_that_stops_answering_but_keeps_the_stream_alive_ends_by_the_idle_gap(vendor):
    _, fake = vendor
    fake.script(Trickle(after=Text(["Half ", "an answer"], finish_reason=None), every=EVERY))
    seen, error = _stream(_provider(vendor, Deadlines(call=30, idle=1.0, stream=30)))
    assert _text(seen) == "Half an answer" and not any(isinstance(d, StepEnd) for d in seen)
    _assert_deadline(error, fake)


def test_a_stream_that_never_ends_ends_by_the_whole_stream_deadline(vendor):
    _, fake = vendor
    fake.script(Trickle(after=Text(["Once "], finish_reason=None), every=EVERY, text="again "))
    seen, error = _stream(_provider(vendor, Deadlines(call=30, idle=30, stream=1.5)))
    assert _text(seen).startswith("Once again again ") and not any(isinstance(d, StepEnd) for d in seen)
    _assert_deadline(error, fake)


def test_a_long_answer_that_keeps_coming_is_not_cut(vendor):
    # 20 chunks 0.15 s apart: about 3 s in all, past the first-delta deadline, each gap far inside the idle one.
    _, fake = vendor
    chunks = [f"word{n} " for n in range(20)]
    fake.script(Text(chunks, delay=0.15))
    seen, error = _stream(_provider(vendor, Deadlines(call=1.0, idle=2.0, stream=60)))
    assert error is None
    assert _text(seen) == "".join(chunks) and isinstance(seen[-1], StepEnd)


def test_a_whole_answer_sent_one_space_at_a_time_ends_by_the_call_deadline(vendor):
    _, fake = vendor
    fake.script(Trickle(every=EVERY))
    provider = _provider(vendor, Deadlines(call=1.0, idle=30, stream=30))

    async def complete() -> ModelError:
        with pytest.raises(ModelError) as caught:
            await asyncio.wait_for(provider.complete(ModelRequest(messages=HELLO, max_tokens=100)), GUARD_SECONDS)
        return caught.value

    _assert_deadline(asyncio.run(complete()), fake)
    # The next call is answered: the provider's client is not left broken.
    fake.script(Text(["A name"]))
    answer = asyncio.run(provider.complete(ModelRequest(messages=HELLO, max_tokens=100)))
    assert answer.text == "A name"
