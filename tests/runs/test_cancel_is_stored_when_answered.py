"""A cancel is a state change the server finishes before it answers (docs/protocol.md#the-event-stream): once
`DELETE …/runs/{id}` has answered, every read sees the partial message and the run's end, with no
waiting or polling on the client's side (the suggestions of the cancelled message, the thread's
messages, the next run's `previousRunId`)."""
from __future__ import annotations

import pytest

from tests.conftest import Api
from tests.runs.conftest import Runs, text_of
from tests.runs.test_run_cancel import start_slow
from tests.support.live import LiveServer
from tests.support.sse import types

pytestmark = pytest.mark.django_db(transaction=True)


def reads_right_after_the_cancel(runs: Runs, api: Api, thread_id: str, run_id: str) -> None:
    """What a client reads the moment the DELETE answered: no poll, no retry."""
    thread = runs.thread(thread_id)
    assert thread["runStatus"] == "idle" and "currentRunId" not in thread, thread
    assert thread["lastCompletedRunId"] == run_id and thread["lastRunCancelled"] is True
    (answer,) = [m for m in thread["messages"] if m["role"] == "assistant"]
    assert answer["isCancelled"] is True
    suggestions = api.get(f"/v1/threads/{thread_id}/messages/{answer['id']}/suggestions")
    assert suggestions.status_code == 200, suggestions.text
    after = runs.run(thread_id, "next", previousRunId=run_id)
    assert types(after)[-1] == "RUN_FINISHED", after


@pytest.mark.both_dbs
def test_a_delete_answers_once_the_partial_message_and_the_runs_end_are_stored(runs: Runs, api):
    slow = start_slow(runs)
    cancelled = api.delete(f"/v1/threads/{slow.thread_id}/runs/{slow.run_id}")
    assert cancelled.status_code == 200, cancelled.text
    reads_right_after_the_cancel(runs, api, slow.thread_id, slow.run_id)
    assert text_of(slow.read_rest()).startswith(text_of(slow.events[:3]))


def test_a_delete_of_a_run_going_on_without_its_reader_answers_once_it_ended(runs: Runs, api):
    # The page's runs: `onDisconnect: "continue"`, the stream closed before the DELETE.
    slow = start_slow_continuing(runs)
    slow.response.close()
    cancelled = api.delete(f"/v1/threads/{slow.thread_id}/runs/{slow.run_id}")
    assert cancelled.status_code == 200, cancelled.text
    reads_right_after_the_cancel(runs, api, slow.thread_id, slow.run_id)


@pytest.mark.both_dbs
def test_a_delete_through_another_process_answers_once_the_streaming_one_stored_the_end(runs: Runs, api):
    second = LiveServer("offline-second")
    try:
        slow = start_slow(runs)
        through_second = Api(second.url, api.session.headers["x-api-key"])
        cancelled = through_second.delete(f"/v1/threads/{slow.thread_id}/runs/{slow.run_id}")
        assert cancelled.status_code == 200, cancelled.text
        reads_right_after_the_cancel(runs, api, slow.thread_id, slow.run_id)
    finally:
        second.stop()


def start_slow_continuing(runs: Runs):
    from tests.runs import test_run_cancel

    class Continuing(Runs):
        def post_new(self, message, **extra):
            return super().post_new(message, onDisconnect="continue", **extra)

    return test_run_cancel.start_slow(Continuing(runs.api))
