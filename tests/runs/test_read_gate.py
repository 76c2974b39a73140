"""A run waits for its client to start reading; a client that never does cancels it, unless the
run was asked to go on without it (`onDisconnect: "continue"`)."""
import asyncio

from runs import views
from runs.control import RunControl
from runs.stream import guard
from runs.stream.feeds import Feed


def _events(control: RunControl, seen: list):
    async def gen():
        seen.append(control.cancel_reason)
        yield object()
    return gen()


def test_a_run_whose_answer_is_never_read_is_cancelled(monkeypatch):
    monkeypatch.setattr(views, "READ_START_TIMEOUT", 0.05)
    monkeypatch.setattr(guard, "encode_event", lambda event: b"x")
    control, seen = RunControl("run_t"), []
    asyncio.run(views._produce(_events(control, seen), Feed("run_t"), control, asyncio.Event(), False))
    assert seen == ["disconnected"]


def test_a_run_that_goes_on_without_its_client_is_not_cancelled_when_never_read(monkeypatch):
    monkeypatch.setattr(views, "READ_START_TIMEOUT", 0.05)
    monkeypatch.setattr(guard, "encode_event", lambda event: b"x")
    control, seen = RunControl("run_t"), []
    asyncio.run(views._produce(_events(control, seen), Feed("run_t"), control, asyncio.Event(), True))
    assert seen == [None]


def test_a_run_starts_as_soon_as_the_client_reads(monkeypatch):
    monkeypatch.setattr(guard, "encode_event", lambda event: b"x")
    control, seen = RunControl("run_t"), []

    async def scenario():
        reading = asyncio.Event()
        task = asyncio.create_task(views._produce(_events(control, seen), Feed("run_t"), control, reading, False))
        await asyncio.sleep(0.01)
        assert seen == []  # nothing happens before the first read
        reading.set()
        await task

    asyncio.run(scenario())
    assert seen == [None]
