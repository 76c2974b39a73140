"""A run whose start is slow to reach its stream is not taken over (runs/starting.py).

The start takes the lock and a fresh lease on a database worker thread; the stream registers with the
watcher, which renews the lease, only once the start is back on the event loop. A start held up between
the two for more than a third of the lease (here 5 s of a 9 s lease: `start_stall` in
tests/support/faulty_app.py) looked like a dead process's run: before the fix this process's own watcher
took it over at ~3 s and the run called the model twice, once from its start and once from the takeover.
"""
from __future__ import annotations

import pytest

from runs.models import Run
from tests.conftest import Api
from tests.support.fake_openai import Text
from tests.support.live import LiveServer
from tests.support.sse import iter_events, types

pytestmark = [pytest.mark.django_db(transaction=True)]

ENV = {"RUN_LEASE_SECONDS": "9", "RUN_WATCH_INTERVAL": "0.2", "TAMBO_TEST_FAULT": "start_stall",
       "TAMBO_TEST_STALL": "5", "MODEL_PROVIDER": "openai", "OPENAI_API_KEY": "sk-test"}


def test_a_start_held_up_past_a_third_of_its_lease_runs_once_and_is_not_taken_over(fake_openai, api_key):
    fake_openai.script(Text(["Hel", "lo"]))
    server = LiveServer("start-stall", {**ENV, "OPENAI_BASE_URL": fake_openai.base_url},
                        app="tests.support.faulty_app:application")
    try:
        api = Api(server.url, api_key)
        assert api.get("/v1/threads").status_code == 200  # the process's watcher is running
        response = api.post("/v1/threads/runs", {"userKey": "alice", "message": {
            "role": "user", "content": [{"type": "text", "text": "hi"}]}}, stream=True)
        assert response.status_code == 200, response.text
        events = list(iter_events(response))
        run_id = response.headers["X-Run-Id"]
    finally:
        server.stop()

    assert len(fake_openai.requests) == 1  # before the fix: 2, the second from the takeover
    assert types(events)[-1] == "RUN_FINISHED" and "RUN_ERROR" not in types(events)
    run = Run.objects.get(id=run_id)
    assert run.status == Run.Status.COMPLETED and run.takeover_count == 0 and run.takeovers in (None, [])
