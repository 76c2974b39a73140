"""The per-process run watcher (runs/control.py) outlives the event loop that started it: a loop that
closed under it leaves its task pending forever, and the next loop gets a watcher of its own."""
from __future__ import annotations

import asyncio
import time

import pytest

from runs.control import RunControl, Watcher

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]


def test_the_watcher_starts_again_on_a_new_event_loop_when_the_old_loop_closed_under_it(settings, monkeypatch):
    settings.RUN_WATCH_INTERVAL = 0.01
    watcher = Watcher()
    polled: list[list[str]] = []

    def cancels_poll(run_ids: list[str]) -> list[str]:
        polled.append(list(run_ids))
        return list(run_ids)  # every run it holds was flagged for cancel elsewhere

    monkeypatch.setattr("runs.control._cancels_poll", cancels_poll)

    # A loop that closes without cancelling its tasks leaves the watcher's task pending forever.
    old_loop = asyncio.new_event_loop()
    stale = RunControl("run_stale")
    stale.settle("completed")  # nothing to poll: the old task just sleeps

    async def register_stale() -> None:
        watcher.register(stale)

    old_loop.run_until_complete(register_stale())
    old_loop.close()
    watcher.unregister(stale)

    control = RunControl("run_new")

    async def register_and_wait() -> bool:
        watcher.register(control)
        deadline = time.monotonic() + 10
        while not control.cancelled and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        watcher.unregister(control)
        return control.cancelled

    assert asyncio.run(register_and_wait()), "no watcher ran on the new loop"
    assert ["run_new"] in polled
