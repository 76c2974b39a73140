"""With no OTLP endpoint, tracing costs nothing on the hot path: no OpenTelemetry code runs during
a run, and the telemetry hooks run a fixed number of Python calls per run, whatever the number of
deltas (counted with a profiler, not timed)."""
from __future__ import annotations

import asyncio
import gc
import json
import sys
from collections import Counter
from pathlib import Path

import pytest
from django.test import AsyncClient

from providers import reset_providers
from telemetry import tracing
from tests.support.sse import decode_events

pytestmark = pytest.mark.both_dbs

TELEMETRY = str(Path(__file__).resolve().parents[2] / "telemetry")


@pytest.fixture
def offline(settings, api_key):
    settings.MODEL_PROVIDER = "offline"
    settings.OFFLINE_MODEL_DELAY = 0.0
    reset_providers()
    yield
    reset_providers()


def _calls_during_run(api_key: str, text: str) -> tuple[Counter, int]:
    counts: Counter = Counter()

    def profile(frame, event, arg):
        if event == "call":
            filename = frame.f_code.co_filename
            if "opentelemetry" in filename:
                counts["opentelemetry"] += 1
            elif filename.startswith(TELEMETRY):
                counts[f"{Path(filename).name}:{frame.f_code.co_name}"] += 1

    async def go():
        response = await AsyncClient().post("/v1/threads/runs", json.dumps(
            {"userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}),
            content_type="application/json", headers={"x-api-key": api_key})
        sys.setprofile(profile)  # the event loop's thread: where the run's loop and its deltas run
        try:
            raw = b"".join([chunk async for chunk in response.streaming_content])
        finally:
            sys.setprofile(None)
        return list(decode_events([raw]))

    # Tasks an earlier event loop left pending (its watcher's, its flusher's) are destroyed when the
    # collector finds them, and asyncio logs that: collected now, not during the counted run.
    gc.collect()
    events = asyncio.run(go())
    assert events[-1]["type"] == "RUN_FINISHED"
    return counts, sum(e["type"] == "TEXT_MESSAGE_CONTENT" for e in events)


def test_with_tracing_off_no_opentelemetry_code_runs_and_hooks_do_not_grow_with_deltas(transactional_db, api_key,
                                                                                        offline):
    assert tracing.ENABLED is False
    short, short_deltas = _calls_during_run(api_key, "!stream 10")
    long, long_deltas = _calls_during_run(api_key, "!stream 400")
    assert long_deltas > short_deltas * 10
    assert short["opentelemetry"] == long["opentelemetry"] == 0
    # The one door of model calls (telemetry/calls.py) is the async generator the model's deltas come
    # through: one resume per delta and two more (its start, its end), the only telemetry code that
    # runs per delta (docs/architecture.md#the-metered-model-call).
    # (`!stream N`: the offline model's N text deltas, which the run merges into fewer events.)
    assert (short.pop("calls.py:_stream"), long.pop("calls.py:_stream")) == (10 + 2, 400 + 2)
    assert short == long, (short, long)
    # And the hooks per run are few: the span hooks return at once, the meter is marked once; the
    # door's own work per call is a handful of calls.
    assert short["runs.py:mark_first_output"] == 1
    door = {name: count for name, count in short.items() if name.startswith("calls.py:")}
    assert sum(short.values()) - sum(door.values()) <= 12 + 1, short  # + metrics.py:model_call
    assert sum(door.values()) <= 6, door
