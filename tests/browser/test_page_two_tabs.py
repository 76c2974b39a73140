"""Two tabs on one thread stay in step through the live thread stream (docs/protocol.md#the-live-thread-stream):
a run started in one tab streams in the other as it happens, and a rename shows there too.

The server's offline model waits OFFLINE_MODEL_DELAY between its 12-character deltas, so the long
message below is answered over several seconds: the other tab must show it before it ends.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, wait_until
from tests.browser.test_chat_page import last_answer, panel, send, state, the_thread
from tests.support.live import LiveServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

WORDS = 200
LONG = "please repeat this: " + " ".join(f"word{i}" for i in range(WORDS))


@pytest.fixture(scope="module")
def live_server_process(django_db_setup, django_db_blocker):
    server = LiveServer("page-two-tabs", extra_env={"OFFLINE_MODEL_DELAY": "0.05"})
    yield server
    server.stop()


def test_a_run_started_in_one_tab_streams_in_the_other(open_page, web_user):
    first = open_page()
    log_in(first)
    send(first, "hello")
    expect(state(first)).to_have_text("completed")
    thread = wait_until(lambda: (t := the_thread(web_user)).run_status == "idle" and t.name and t,
                        what="a named, idle thread")
    # The same browser session in a second tab, on the same thread.
    second = first.context.new_page()
    second.errors = []
    second.on("pageerror", lambda error: second.errors.append(str(error)))
    with second.expect_response(lambda r: r.url.split("?")[0].endswith(f"/v1/threads/{thread.id}/events")):
        second.goto(f"/?thread={thread.id}")
    second.wait_for_selector("body[data-ready=true]")
    expect(panel(second).locator(".msg-assistant")).to_have_count(1)

    send(first, LONG)
    # The other tab shows the answer while it is being written, not after a reload.
    expect(last_answer(second)).to_contain_text("word1")
    assert the_thread(web_user).run_status != "idle", "the run had ended before the other tab showed it"
    expect(panel(second).locator(".msg-user")).to_have_count(2)
    expect(state(first)).to_have_text("completed", timeout=30_000)
    expect(last_answer(second)).to_contain_text(f"word{WORDS - 1}", timeout=30_000)
    from threads.models import Message

    stored = Message.objects.filter(thread=thread, role="assistant").order_by("-created_at").first()
    expect(last_answer(second)).to_have_text(stored.content[0]["text"].strip())
    expect(panel(second).locator(".msg-assistant")).to_have_count(2)

    # A rename through the API shows in the other tab's list.
    from threads.services import thread_update

    thread.refresh_from_db()
    thread_update(thread=thread, name="Renamed elsewhere")
    expect(second.locator(".thread-item").first).to_contain_text("Renamed elsewhere")
    assert first.errors == [] and second.errors == []
