"""A run waits for its client to start reading; a client that never does cancels it."""
import asyncio

from runs import guard, views
from runs.control import RunControl


def _events(control: RunControl, seen: list):
    async def gen():
        seen.append(control.cancel_reason)
        yield object()
    return gen()


def test_a_run_whose_answer_is_never_read_is_cancelled(monkeypatch):
    monkeypatch.setattr(views, "READ_START_TIMEOUT", 0.05)
    monkeypatch.setattr(guard, "encode_event", lambda event: b"x")
    control, seen, queue = RunControl("run_t"), [], asyncio.Queue()
    asyncio.run(views._produce(_events(control, seen), queue, control, asyncio.Event()))
    assert seen == ["disconnected"]


def test_a_run_starts_as_soon_as_the_client_reads(monkeypatch):
    monkeypatch.setattr(guard, "encode_event", lambda event: b"x")
    control, seen = RunControl("run_t"), []

    async def scenario():
        reading = asyncio.Event()
        queue: asyncio.Queue = asyncio.Queue()
        task = asyncio.create_task(views._produce(_events(control, seen), queue, control, reading))
        await asyncio.sleep(0.01)
        assert seen == []  # nothing happens before the first read
        reading.set()
        await task

    asyncio.run(scenario())
    assert seen == [None]
