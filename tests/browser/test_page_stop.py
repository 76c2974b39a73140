"""Stop, then send, on the page: the next message always follows the cancelled run, and a send the
server refuses keeps its text in the box with a Retry (docs/protocol.md#the-event-stream)."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.test_chat_page import panel, send, state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

# Waits between Stop and the next message, in seconds: at once, within the cancel, and well after.
WAITS = [0, 0.05, 0.2, 0.5, 1, 1.5, 2, 3, 0, 0.1]
ROUNDS = 20


def console_errors(page) -> list[str]:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    return errors


def test_stop_then_send_twenty_times_never_loses_a_message(chat):
    errors = console_errors(chat)
    failures = []
    for round_ in range(ROUNDS):
        send(chat, f"!slow {round_}")
        expect(state(chat)).to_have_text("streaming…")
        panel(chat).locator("[data-role=stop]").click()
        expect(state(chat)).to_have_text("cancelled")
        chat.wait_for_timeout(WAITS[round_ % len(WAITS)] * 1000)
        send(chat, f"next {round_}")
        chat.wait_for_function("""() => {
            const s = document.querySelector('#panel-threads [data-role=state]').dataset.state;
            return s === 'completed' || s === 'error';
        }""", timeout=20_000)
        if panel(chat).locator(".msg-error").count():
            failures.append((round_, panel(chat).locator(".msg-error").first.inner_text()))
            break
        expect(panel(chat).locator(".msg-assistant .block-text").last).to_contain_text(f"You said: next {round_}")
    assert failures == []
    assert errors == [] and chat.errors == []


def test_a_refused_send_keeps_its_text_in_the_box_and_retry_sends_it(chat):
    errors = console_errors(chat)
    send(chat, "hi")
    expect(state(chat)).to_have_text("completed")
    chat.wait_for_function("() => !window.tamboPage.threads.busy")  # the thread was read again
    # The page's idea of the last completed run goes wrong (as a stale read would make it).
    chat.evaluate("() => { window.tamboPage.threads.thread.lastCompletedRunId = 'run_stale'; }")

    with chat.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/runs")) as refused:
        send(chat, "second message")
    assert refused.value.status == 400 and refused.value.json()["code"] == "INVALID_PREVIOUS_RUN"

    error = panel(chat).locator(".msg-error")
    expect(error).to_contain_text("Not sent")
    expect(panel(chat).locator("[data-role=input]")).to_have_value("second message")
    expect(panel(chat).locator(".msg-user")).to_have_count(1)  # the refused message left the transcript

    error.locator("button.retry").click()

    expect(panel(chat).locator(".msg-assistant .block-text").last).to_contain_text("You said: second message")
    expect(panel(chat).locator("[data-role=input]")).to_have_value("")
    expect(panel(chat).locator(".msg-user")).to_have_count(2)
    expect(panel(chat).locator(".msg-error")).to_have_count(0)
    # Chromium logs the refused request itself; nothing else went to the console.
    assert [e for e in errors if "400" not in e] == [] and chat.errors == []
