"""The per-delta path counted, not timed: a model's streamed answer, as bytes arriving a block at a
time, read by the `openai` provider's reader and fold (providers/openai_provider.py), turned into
events by the run's step (runs/step.py), encoded (runs/stream/sse.py), appended to the run's feed and
sealed there in batches (runs/stream/feeds.py), as the run's stream does. Python calls are counted
at two answer sizes: the work is linear (the same calls per delta at both sizes) and within a fixed
number of calls per delta, so a per-delta cost that creeps in (a model built per delta, an Event
allocated per append, a batch's work redone per delta) fails here."""
from __future__ import annotations

import asyncio

import orjson
import pytest

from providers.openai_provider import _chunks, _StepFold
from runs.step import Step
from runs.stream.feeds import Feed
from runs.stream.guard import encode_event
from runs.toolbox import Toolbox
from tests.support.work_count import counting_calls

# A block of the body as the transport hands it over: several events arrive together on a fast stream.
BLOCK = 4096
# Deltas appended between two seals (a reader or the event log taking what is ready).
BATCH = 16
# Python calls per delta on the whole path: 18.5 before this round's batching (an Event made and the
# flusher woken per append, pydantic's __setattr__ for each timestamp, each merged batch built as a
# model and encoded again), 12.6 after.
CALLS_PER_DELTA = 14


def _body(deltas: int) -> list[bytes]:
    events = [b"data: " + orjson.dumps({"choices": [{"index": 0, "delta": {"content": f"w{i} "}}]}) + b"\n\n"
              for i in range(deltas)]
    events.append(b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n')
    events.append(b"data: [DONE]\n\n")
    raw = b"".join(events)
    return [raw[i:i + BLOCK] for i in range(0, len(raw), BLOCK)]


async def _blocks(blocks: list[bytes]):
    for block in blocks:
        yield block


async def _stream(blocks: list[bytes], feed: Feed) -> int:
    fold, step = _StepFold(), Step(message_id="msg_1", toolbox=Toolbox())
    appended = 0
    async for chunk in _chunks(_blocks(blocks)):
        for delta in fold.feed(chunk):
            for event in step.on_delta(delta):
                feed.append(encode_event(event), event)
                appended += 1
                if appended % BATCH == 0:
                    feed.seal()
    feed.seal()
    return appended


def _calls(deltas: int) -> tuple[int, bytes]:
    blocks = _body(deltas)

    async def run() -> tuple[int, bytes]:
        feed = Feed("run_1")
        with counting_calls() as counter:
            await _stream(blocks, feed)
        chunk, _, _ = feed.take(0)
        return counter.calls, chunk
    return asyncio.run(run())


@pytest.mark.parametrize("size", [2000])
def test_the_per_delta_path_is_linear_and_bounded(size):
    small_calls, small = _calls(size // 4)
    large_calls, large = _calls(size)

    # Everything arrived, in order, in merged events.
    text = "".join(orjson.loads(line[6:])["delta"] for line in large.split(b"\n") if b"TEXT_MESSAGE_CONTENT" in line)
    assert text == "".join(f"w{i} " for i in range(size))
    assert large.count(b"TEXT_MESSAGE_CONTENT") <= size // BATCH + 2
    # Linear: four times the deltas, four times the calls (a constant for setup aside).
    per_small, per_large = small_calls / (size // 4), large_calls / size
    assert abs(per_large - per_small) < 0.5, (per_small, per_large)
    assert per_large <= CALLS_PER_DELTA, per_large
