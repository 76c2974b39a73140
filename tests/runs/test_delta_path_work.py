"""The per-delta path counted, not timed: a model's streamed answer, as bytes arriving a block at a
time, read by the `openai` provider's reader and fold (providers/openai_provider.py, through
providers/vendor_client.py `stream_folded`, as `OpenAIProvider.stream` reads it), turned into events
by the run's step (runs/step.py), encoded (runs/stream/sse.py), appended to the run's feed and sealed
there in batches (runs/stream/feeds.py), as the run's stream does. Python calls are counted at two
answer sizes: the work is linear (the same calls per delta at both sizes) and within a fixed number
of calls per delta, so a per-delta cost that creeps in (a model built per delta, an Event allocated
per append, a batch's work redone per delta) fails here.

A fast model's block holds many events: everything above the fold is then done once per block
(providers/batching.py), so a burst costs a fraction of the calls of a slow stream, where each block
holds one event and gives exactly the deltas and events it always did."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import orjson
import pytest
from ag_ui.core import RunFinishedEvent, TextMessageContentEvent

from providers.base import StepEnd, TextDelta
from providers.openai_provider import _chunks, _StepFold
from providers.vendor_client import stream_folded
from runs.step import Step
from runs.stream.feeds import Feed, read
from runs.stream.guard import encode_event
from runs.toolbox import Toolbox
from tests.support.work_count import counting_calls

# A block of the body as the transport hands it over: several events arrive together on a fast stream.
BLOCK = 4096
# What a read holds when the server is well behind a fast model (aiohttp hands over all that arrived).
BURST_BLOCK = 64 * 1024
# Deltas appended between two seals (a reader or the event log taking what is ready).
BATCH = 16
# Python calls per delta on the whole path, 4 KB blocks. The path from the fold up once cost 18.5 (an
# Event made and the flusher woken per append, pydantic's __setattr__ per timestamp, each merged batch
# built as a model and encoded again), then 12.6; read through `stream_folded`, with every delta going
# up the path on its own (a deadline's timer, the generators, the step, the encoding, the feed), 34.7.
# With a read's deltas merged: 3.6 to 3.9; with a read's text-only chunks folded from their strings
# (`_StepFold.feed_read`), 1.65 to 1.9.
CALLS_PER_DELTA = 3
# A 5,000-delta burst in 64 KB reads: 1.07 calls per delta (34.6 before; 3.1 with merging alone).
BURST_CALLS_PER_DELTA = 1.5


def _events(deltas: int) -> bytes:
    events = [b"data: " + orjson.dumps({"choices": [{"index": 0, "delta": {"content": f"w{i} "}}]}) + b"\n\n"
              for i in range(deltas)]
    events.append(b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n')
    events.append(b"data: [DONE]\n\n")
    return b"".join(events)


def _body(deltas: int, block: int = BLOCK) -> list[bytes]:
    raw = _events(deltas)
    return [raw[i:i + block] for i in range(0, len(raw), block)]


def _one_event_per_block(deltas: int) -> list[bytes]:
    return [event + b"\n\n" for event in _events(deltas).split(b"\n\n") if event]


class _Opening:
    """What an SDK's `with_streaming_response.create(...)` gives `stream_folded`: a response whose
    body arrives as `blocks`."""

    def __init__(self, blocks: list[bytes]):
        self._blocks = blocks

    async def __aenter__(self):
        return SimpleNamespace(http_response=SimpleNamespace(aiter_bytes=self._body))

    async def __aexit__(self, *exc) -> None:
        return None

    async def _body(self):
        for block in self._blocks:
            yield block


def _deltas(blocks: list[bytes]):
    return stream_folded(_Opening(blocks), api_error=RuntimeError, to_model_error=None, read=_chunks,
                         fold=_StepFold())


async def _stream(blocks: list[bytes], feed: Feed) -> list:
    """The events of the answer `blocks`, each appended to `feed` (sealed every BATCH events)."""
    step = Step(message_id="msg_1", toolbox=Toolbox())
    out = []
    async for delta in _deltas(blocks):
        if isinstance(delta, StepEnd):
            continue
        for event in step.on_delta(delta):
            feed.append(encode_event(event), event)
            out.append(event)
            if len(out) % BATCH == 0:
                feed.seal()
    for event in step.finish():
        feed.append(encode_event(event), event)
        out.append(event)
    feed.seal()
    return out


def _calls(blocks: list[bytes]) -> tuple[int, bytes]:
    async def run() -> tuple[int, bytes]:
        feed = Feed("run_1")
        with counting_calls() as counter:
            await _stream(blocks, feed)
        chunk, _, _ = feed.take(0)
        return counter.calls, chunk
    return asyncio.run(run())


def _text(chunk: bytes) -> str:
    return "".join(orjson.loads(line[6:])["delta"] for line in chunk.split(b"\n")
                   if b"TEXT_MESSAGE_CONTENT" in line)


@pytest.mark.parametrize("size", [2000])
def test_the_per_delta_path_is_linear_and_bounded(size):
    small_calls, small = _calls(_body(size // 4))
    large_calls, large = _calls(_body(size))

    # Everything arrived, in order, in merged events.
    assert _text(large) == "".join(f"w{i} " for i in range(size))
    assert large.count(b"TEXT_MESSAGE_CONTENT") <= size // BATCH + 2
    # Linear: four times the deltas, four times the calls (a constant for setup aside).
    per_small, per_large = small_calls / (size // 4), large_calls / size
    assert abs(per_large - per_small) < 0.5, (per_small, per_large)
    assert per_large <= CALLS_PER_DELTA, per_large


def test_a_burst_is_handled_per_read_not_per_delta():
    size = 5000
    calls, chunk = _calls(_body(size, BURST_BLOCK))

    assert _text(chunk) == "".join(f"w{i} " for i in range(size))
    # One text event per read of the body (a 64 KB read holds about 1,000 of these deltas).
    assert chunk.count(b"TEXT_MESSAGE_CONTENT") <= len(_body(size, BURST_BLOCK)) + 1
    assert calls / size <= BURST_CALLS_PER_DELTA, calls / size


def test_a_slow_stream_gives_one_delta_and_one_event_per_read():
    size = 50

    async def run() -> tuple[list, list]:
        deltas = [d async for d in _deltas(_one_event_per_block(size))]
        events = await _stream(_one_event_per_block(size), Feed("run_1"))
        return deltas, events
    deltas, events = asyncio.run(run())

    assert deltas[:-1] == [TextDelta(f"w{i} ") for i in range(size)]
    assert isinstance(deltas[-1], StepEnd)
    assert [e.delta for e in events if isinstance(e, TextMessageContentEvent)] == [f"w{i} " for i in range(size)]


def test_what_is_ready_goes_out_in_one_write():
    async def run() -> list[bytes]:
        feed = Feed("run_1")
        events = await _stream(_body(200), feed)
        final = RunFinishedEvent(thread_id="thr_1", run_id="run_1")
        feed.append(encode_event(final), final)
        feed.end()
        assert len(events) > 3
        return [chunk async for chunk in read(feed, 0)]
    chunks = asyncio.run(run())

    # The answer's events (start, text sealed in batches, end) and the run's end: one body chunk.
    assert len(chunks) == 1
    assert chunks[0].count(b"\nid: ") + 1 == chunks[0].count(b"data: ")
