"""Reloading the chat page during a run (docs/protocol.md#resumable-runs): the page reopens the thread and the
answer goes on streaming from the run's events route, shown once and complete; Stop still cancels.

The server's offline model waits OFFLINE_MODEL_DELAY between its 12-character deltas, so a long
message is answered over several seconds: long enough to reload in the middle.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import wait_until
from tests.browser.test_chat_page import last_answer, panel, send, state, the_thread
from tests.support.live import LiveServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

WORDS = 200
LONG = "please repeat this: " + " ".join(f"word{i}" for i in range(WORDS))


@pytest.fixture(scope="module")
def live_server_process(django_db_setup, django_db_blocker):
    server = LiveServer("page-resume", extra_env={"OFFLINE_MODEL_DELAY": "0.05"})
    yield server
    server.stop()


def console_errors(page) -> list[str]:
    page.console_errors = []
    page.on("console", lambda m: page.console_errors.append(m.text) if m.type == "error" else None)
    return page.console_errors


def test_a_reload_during_a_run_resumes_the_answer_once_and_complete(chat, web_user):
    errors = console_errors(chat)
    send(chat, LONG)
    expect(last_answer(chat)).to_contain_text("word1")
    expect(state(chat)).to_have_text("streaming…")
    run_id = wait_until(lambda: the_thread(web_user).current_run_id, what="the running run")

    with chat.expect_response(lambda r: r.url.endswith(f"/runs/{run_id}/events")) as resumed:
        chat.reload()
    assert resumed.value.status == 200
    chat.wait_for_selector("body[data-ready=true]")
    expect(state(chat)).to_have_text("completed", timeout=30_000)

    thread = wait_until(lambda: (t := the_thread(web_user)).run_status == "idle" and t, what="an idle thread")
    assert thread.last_completed_run_id == run_id
    expect(chat.locator(".thread-item").first).not_to_contain_text("Untitled")
    answers = panel(chat).locator(".msg-assistant .block-text")
    expect(answers).to_have_count(1)
    text = answers.first.inner_text()
    assert text.count("word0 ") == 1 and text.count(f"word{WORDS - 1}") == 1
    from threads.models import Message

    stored = Message.objects.get(thread=thread, role="assistant").content[0]["text"]
    assert text.strip() == stored.strip()
    expect(panel(chat).locator(".msg-user")).to_have_count(1)
    assert errors == [] and chat.errors == []
    assert chat.evaluate("sessionStorage.getItem('tambo.liveRun')") is None


def test_after_a_reload_stop_still_cancels_the_run(chat, web_user):
    send(chat, LONG)
    expect(last_answer(chat)).to_contain_text("word1")
    run_id = wait_until(lambda: the_thread(web_user).current_run_id, what="the running run")
    with chat.expect_response(lambda r: r.url.endswith(f"/runs/{run_id}/events")):
        chat.reload()
    expect(state(chat)).to_have_text("streaming…")

    with chat.expect_response(lambda r: r.request.method == "DELETE") as deleted:
        chat.keyboard.press("Escape")
    assert deleted.value.status == 200
    expect(state(chat)).to_have_text("cancelled")
    thread = wait_until(lambda: (t := the_thread(web_user)).run_status == "idle" and t, what="an idle thread")
    assert thread.last_run_cancelled is True


def test_a_reload_after_the_run_ended_just_shows_the_thread(chat, web_user):
    send(chat, "hello there")
    expect(state(chat)).to_have_text("completed")
    # As if the page had been closed mid-run and the run had ended since.
    thread = the_thread(web_user)
    chat.evaluate("""([threadId, runId]) => sessionStorage.setItem('tambo.liveRun',
        JSON.stringify({threadId, runId, lastEventId: '3'}))""", [thread.id, thread.last_completed_run_id])
    requests: list[str] = []
    chat.on("request", lambda r: requests.append(r.url))
    chat.reload()
    chat.wait_for_selector("body[data-ready=true]")
    expect(state(chat)).to_have_text("completed")
    expect(panel(chat).locator(".msg-assistant")).to_have_count(1)
    # No run is read again (the thread's own live stream, .../threads/{id}/events, is not a run's).
    assert not [url for url in requests if "/runs/" in url and url.endswith("/events")]
    assert chat.evaluate("sessionStorage.getItem('tambo.liveRun')") is None
