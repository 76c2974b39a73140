"""A server process killed (kill -9) in the middle of a run that cannot be taken over (docs/protocol.md#after-a-crash): another process shows
the thread as it is without waiting for a new run, records the dead run, keeps the text the client
saw, and the thread works again."""
from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from runs.lock import lock_held
from runs.models import Run
from tests.conftest import Api
from tests.runs.conftest import Runs, event_of
from tests.support.live import LiveServer
from tests.support.sse import iter_events
from threads.models import RunStatus, Thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]

LEASE = "3"  # short, so the test waits little; long enough that a busy machine does not expire a live run


@pytest.fixture
def doomed_server(django_db_setup):
    server = LiveServer("doomed", {"RUN_LEASE_SECONDS": LEASE})
    yield server
    if server.process.poll() is None:
        server.stop()
    else:
        server._log.close()


def _poll(predicate, what: str, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _stream_until_checkpointed(runs: Runs):
    """Starts a slow run and reads it until the database holds a checkpoint of all the text read.

    Returns (thread id, run id, text the client saw, the open response: a client that stays).
    """
    response = runs.post_new("!slow please")
    assert response.status_code == 200
    thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
    seen = ""
    # Read through one iterator left open: closing it would close the connection, which cancels the run.
    events = iter_events(response)
    while len(seen) < 30:
        event = next(events)
        if event["type"] == "TEXT_MESSAGE_CONTENT":
            seen += event["delta"]
    # A run no process may take over (docs/operations.md#takeover), as an AG-UI run: these tests pin
    # what happens to those (tests/runs/test_takeover.py to the others).
    Run.objects.filter(id=run_id).update(resume=None)
    # The client stops reading here; the checkpoint catches up with what it saw within a second or so.
    _poll(lambda: (Run.objects.get(id=run_id).partial_text or "").startswith(seen), "a checkpoint")
    return thread_id, run_id, seen, (response, events)


def test_a_run_killed_mid_stream_is_shown_and_recorded_as_expired_by_another_process(
        doomed_server, live_server_url, api_key):
    doomed = Runs(Api(doomed_server.url, api_key))
    other = Runs(Api(live_server_url, api_key))
    thread_id, run_id, seen, _response = _stream_until_checkpointed(doomed)

    doomed_server.process.kill()  # kill -9: no handler runs, nothing is released
    doomed_server.process.wait()

    # Another process shows the thread idle once the lease ran out, with no new run started.
    shown = _poll(lambda: (t := other.thread(thread_id))["runStatus"] == "idle" and t, "the thread to read idle")
    assert "currentRunId" not in shown
    assert shown["lastRunError"]["code"] == "RUN_LEASE_EXPIRED"
    # The dead run is not the active one: cancelling it finds nothing and frees nothing.
    answer = other.api.delete(f"/v1/threads/{thread_id}/runs/{run_id}")
    assert answer.status_code == 404 and answer.json()["code"] == "RUN_NOT_FOUND"

    # The other process's watcher records it, with the text the client saw, without a new run.
    _poll(lambda: Thread.objects.get(id=thread_id).run_status == RunStatus.IDLE, "the watcher's record")
    dead = Run.objects.get(id=run_id)
    assert (dead.status, dead.error_code) == (Run.Status.FAILED, "RUN_LEASE_EXPIRED")
    thread = other.thread(thread_id)
    assert thread["lastRunError"]["code"] == "RUN_LEASE_EXPIRED" and thread["runStatus"] == "idle"
    (partial,) = [m for m in thread["messages"] if m["role"] == "assistant"]
    assert partial["isCancelled"] is True
    assert partial["content"] == [{"type": "text", "text": dead.partial_text}]
    assert partial["content"][0]["text"].startswith(seen)

    # The thread works again.
    extra = {"previousRunId": thread["lastCompletedRunId"]} if thread.get("lastCompletedRunId") else {}
    events = other.run(thread_id, "hello again", **extra)
    event_of(events, "RUN_FINISHED")


def test_a_run_that_takes_over_a_killed_run_stores_its_checkpointed_text(doomed_server, api_key):
    doomed = Runs(Api(doomed_server.url, api_key))
    thread_id, run_id, seen, _response = _stream_until_checkpointed(doomed)
    doomed_server.process.kill()
    doomed_server.process.wait()
    # The lease is made to look expired and taken over in one transaction, so no process's watcher
    # can record the dead run first.
    with transaction.atomic():
        Thread.objects.filter(id=thread_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        with lock_held(thread_id=thread_id, run_id="run_next") as t:
            Run.objects.create(id="run_next", thread=t)

    dead = Run.objects.get(id=run_id)
    assert (dead.status, dead.error_code) == (Run.Status.FAILED, "RUN_LEASE_EXPIRED")
    (partial,) = Thread.objects.get(id=thread_id).messages.filter(role="assistant")
    assert partial.is_cancelled and partial.content[0]["text"].startswith(seen)
    assert Thread.objects.get(id=thread_id).current_run_id == "run_next"
