"""When memory is given back after a burst (core/memory.py): once no stream is open and nothing that
registered itself busy (the run feeds waiting for the event log) still holds the burst, once."""
from __future__ import annotations

import asyncio

import pytest

from core import memory


@pytest.fixture
def quick(monkeypatch):
    calls: list[int] = []
    busy = {"on": False}
    monkeypatch.setattr(memory, "QUIET_CHECK", 0.01)
    monkeypatch.setattr(memory, "TRIM_INTERVAL", 0.0)
    monkeypatch.setattr(memory, "_busy", [lambda: busy["on"]])
    monkeypatch.setattr(memory, "_open_streams", 0)
    monkeypatch.setattr(memory, "_trim_task", None)
    monkeypatch.setattr(memory, "_give_back", lambda: calls.append(1) or True)
    return calls, busy


def test_the_last_stream_s_end_gives_memory_back_once_nothing_is_busy(quick):
    calls, busy = quick

    async def burst():
        busy["on"] = True  # the feeds still wait for the log
        for _ in range(3):
            memory.stream_opened()
        for _ in range(3):
            memory.stream_closed()
        await asyncio.sleep(0.1)
        assert calls == []  # not while the burst's events are still held
        busy["on"] = False
        await asyncio.sleep(0.1)
        assert calls == [1]
        await asyncio.sleep(0.1)
        assert calls == [1]  # once per quiet spell

    asyncio.run(burst())


def test_a_stream_that_opens_before_the_process_is_quiet_puts_it_off(quick):
    calls, busy = quick

    async def burst():
        memory.stream_opened()
        memory.stream_closed()
        memory.stream_opened()  # a new burst begins before the first check
        await asyncio.sleep(0.1)
        assert calls == []
        memory.stream_closed()
        await asyncio.sleep(0.1)
        assert calls == [1]

    asyncio.run(burst())
