"""Retrying a failed turn: the same message sent again after a run failed with nothing stored after
that message is answered as it stands, not stored a second time."""
import pytest

from tests.support.run_requests import last_run_id, run, text_of

pytestmark = pytest.mark.django_db(transaction=True)


def user_texts(api, thread_id: str) -> list[str]:
    messages = api.get(f"/v1/threads/{thread_id}").json()["messages"]
    return [b["text"] for m in messages if m["role"] == "user" for b in m["content"] if b["type"] == "text"]


def test_the_same_message_after_a_failed_run_is_stored_once(api):
    thread_id, events = run(api, "!fail the first time")
    assert events[-1]["type"] == "RUN_ERROR"

    _, again = run(api, "!fail the first time", thread_id=thread_id, previousRunId=last_run_id(api, thread_id))

    assert again[-1]["type"] == "RUN_ERROR"
    assert user_texts(api, thread_id) == ["!fail the first time"]


def test_a_different_message_after_a_failed_run_is_stored(api):
    thread_id, _ = run(api, "!fail once")

    _, events = run(api, "something else", thread_id=thread_id, previousRunId=last_run_id(api, thread_id))

    assert "You said: something else" in text_of(events)
    assert user_texts(api, thread_id) == ["!fail once", "something else"]


def test_the_same_message_after_a_successful_run_is_a_new_message(api):
    thread_id, _ = run(api, "hello")

    run(api, "hello", thread_id=thread_id, previousRunId=last_run_id(api, thread_id))

    assert user_texts(api, thread_id) == ["hello", "hello"]
