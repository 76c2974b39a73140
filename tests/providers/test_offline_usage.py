"""The offline model reports honest token counts: estimated as the context budget estimates them
(providers/estimate.py), never 0 prompt tokens, so usage pages and budgets count its runs."""
from __future__ import annotations

import pytest

from providers.estimate import prompt_tokens, text_tokens
from runs.models import Run
from tests.runs.conftest import Runs, runs, text_of  # noqa: F401 - the `runs` fixture
from telemetry.models import Usage

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_run_on_the_offline_model_counts_its_prompt_and_answer(runs: Runs):
    thread_id, events = runs.run_new("Tell me something about token counts, please.")
    run = Run.objects.get(id=events[0]["runId"])
    usage = run.usage
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] == text_tokens(text_of(events))
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    row = Usage.objects.get(run_id=run.id)
    assert row.input_tokens == usage["prompt_tokens"] and row.output_tokens == usage["completion_tokens"]

    # A longer history is a longer prompt.
    second = runs.run(thread_id, "And again, with the first exchange in the history.", previousRunId=run.id)
    assert Run.objects.get(id=second[0]["runId"]).usage["prompt_tokens"] > usage["prompt_tokens"]


def test_the_estimate_is_characters_over_four_plus_framing():
    messages = [{"role": "system", "content": "x" * 40}, {"role": "user", "content": "y" * 8}]
    assert prompt_tokens(messages) == (10 + 4) + (2 + 4)


@pytest.mark.parametrize("text, deltas, sleeps", [("!stream 3", 3, []), ("!stream 4 every 0.5", 4, [0.5] * 4),
                                                  ("!stream 2 every 600", 2, [60.0] * 2)])
def test_the_bench_rule_streams_n_words_paced_by_every_at_most_a_minute(monkeypatch, text, deltas, sleeps):
    import asyncio

    from providers import offline
    from providers.base import ModelRequest, TextDelta

    slept: list[float] = []

    async def sleep(seconds: float) -> None:  # counts the pauses instead of waiting them out
        slept.append(seconds)

    monkeypatch.setattr(offline.asyncio, "sleep", sleep)

    async def collect() -> list:
        model = offline.OfflineProvider(delay=0)
        return [d async for d in model.stream(ModelRequest(messages=[{"role": "user", "content": text}], model="m"))]

    got = asyncio.run(collect())
    assert [d.text for d in got if isinstance(d, TextDelta)] == [f"w{i} " for i in range(deltas)]
    assert slept == sleeps
