"""Stop, then send, on the page: the next message always follows the cancelled run, and a send the
server refuses keeps its text in the box with a Retry (docs/protocol.md#the-event-stream)."""
from __future__ import annotations

import time

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.browser.conftest import log_in
from tests.browser.test_chat_page import panel, send, state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

# Fifty rounds with waits of 0-15 s between Stop and the next message (issue 35), spread evenly. They
# run in PAGES pages at once (each its own login session and thread), so the suite waits about a
# PAGES-th of the 375 s the waits add up to.
ROUNDS = 50
PAGES = 10
WAITS = [round(15 * i / (ROUNDS - 1), 2) for i in range(ROUNDS)]
STEP_TIMEOUT = 30.0


def console_errors(page) -> list[str]:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    return errors


def _schedules() -> list[list[tuple[int, float]]]:
    """The rounds (number, wait) of each page: the longest waits dealt out first, each to the page
    with the least waiting so far, so the pages end together."""
    pages: list[list[tuple[int, float]]] = [[] for _ in range(PAGES)]
    for number, wait in sorted(enumerate(WAITS), key=lambda r: -r[1]):
        min(pages, key=lambda rounds: sum(w for _, w in rounds)).append((number, wait))
    return pages


def _shown_state(page) -> str:
    return page.evaluate("() => document.querySelector('#panel-threads [data-role=state]').dataset.state")


def _can_send(page) -> bool:
    return page.evaluate("() => !document.querySelector('#panel-threads [data-role=send]').disabled")


def _type_and_send(page, text: str) -> None:
    box = panel(page).locator("[data-role=input]")
    box.fill(text)
    box.press("Enter")


# Presses Stop `after` ms once the answer streams. In the page itself: the test polls ten pages in
# turn, and on a busy machine a page's slow answer could end before its turn came.
ARM_STOP = """(after) => {
    const badge = document.querySelector('#panel-threads [data-role=state]');
    const observer = new MutationObserver(() => {
        if (badge.dataset.state !== 'streaming') return;
        observer.disconnect();
        setTimeout(() => document.querySelector('#panel-threads [data-role=stop]').click(), after);
    });
    observer.observe(badge, {attributes: true, attributeFilter: ['data-state']});
}"""


def _stop_then_send(page, rounds: list[tuple[int, float]], failures: list):
    """One page's rounds as steps: it yields what it waits for (a check), acts when that holds. Waits
    under a second are waited at once, as a person sending right after Stop would."""
    for number, wait in rounds:
        yield lambda: _can_send(page)
        page.evaluate(ARM_STOP, 300 * (number % 5))
        _type_and_send(page, f"!slow {number}")
        yield lambda: _shown_state(page) == "cancelled"
        if wait < 1:
            page.wait_for_timeout(wait * 1000)
            expect(panel(page).locator("[data-role=send]")).to_be_enabled()
        else:
            due = time.monotonic() + wait
            yield lambda: time.monotonic() >= due
            yield lambda: _can_send(page)
        _type_and_send(page, f"next {number}")
        yield lambda: _shown_state(page) in ("completed", "error")
        errors = panel(page).locator(".msg-error")
        if errors.count():
            failures.append((number, wait, errors.first.inner_text()))
            return
        answer = panel(page).locator(".msg-assistant .block-text").last.inner_text()
        if f"You said: next {number}" not in answer:
            failures.append((number, wait, f"the answer was {answer[:200]!r}"))
            return


def _drive(steps: dict) -> None:
    """Runs every page's steps together: each check is polled in turn, a page moves on when its holds."""
    waiting = {page: (next(gen), time.monotonic()) for page, gen in steps.items()}
    while waiting:
        for page in list(waiting):
            check, since = waiting[page]
            if check():
                try:
                    waiting[page] = (next(steps[page]), time.monotonic())
                except StopIteration:
                    del waiting[page]
            elif time.monotonic() - since > STEP_TIMEOUT:
                raise AssertionError(f"a page waited {STEP_TIMEOUT} s in state {_shown_state(page)!r}")
        time.sleep(0.1)


def test_stop_then_send_fifty_times_with_waits_up_to_fifteen_seconds_never_loses_a_message(open_page, web_user):
    from projects.config import Limits, ProjectSettings, project_settings_save
    from projects.models import Project

    # 150 runs and their suggestions within a few minutes: the page's project has no run rate.
    demo, _ = Project.objects.get_or_create(name=settings.WEB_PROJECT_NAME)
    project_settings_save(demo, ProjectSettings(limits=Limits(runs_per_minute=0)))
    pages = []
    for _ in range(PAGES):
        page = open_page()
        log_in(page)
        pages.append(page)
    errors = {page: console_errors(page) for page in pages}
    failures: list = []
    _drive({page: _stop_then_send(page, rounds, failures) for page, rounds in zip(pages, _schedules())})
    assert sorted(n for rounds in _schedules() for n, _ in rounds) == list(range(ROUNDS))
    assert failures == []
    assert all(errors[page] == [] and page.errors == [] for page in pages), (
        {i: (errors[page], page.errors) for i, page in enumerate(pages)})
    # Every round's next message was stored, after its cancelled run, in each page's own thread.
    from threads.models import Message

    sent = [b["text"] for m in Message.objects.filter(role="user") for b in m.content if b.get("type") == "text"]
    assert sorted(t for t in sent if t.startswith("next ")) == sorted(f"next {n}" for n in range(ROUNDS))


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
