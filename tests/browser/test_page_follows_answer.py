"""The conversation follows the answer while the person is at its bottom, whatever the answer renders
(components that lay out after they are drawn, a 3,000 px answer), and lets go once they scroll up."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.test_chat_page import panel, send, state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

LIST = "#panel-threads [data-role=messages]"


def distance_from_bottom(page) -> float:
    return page.eval_on_selector(LIST, "l => l.scrollHeight - l.scrollTop - l.clientHeight")


def answered(page) -> None:
    expect(state(page)).to_have_text("completed", timeout=30_000)
    page.wait_for_function("() => !window.tamboPage.threads.busy")
    page.wait_for_timeout(500)  # what lays out after the last event (charts) has laid out


def test_it_follows_a_two_component_answer_and_a_3000_px_answer(chat):
    send(chat, "!stream 2500")
    answered(chat)
    assert chat.eval_on_selector(LIST, "l => l.scrollHeight") > 3000
    assert distance_from_bottom(chat) < 80

    send(chat, 'Show a DataCard {"title": "Signups", "value": 42} and a BarChart')
    expect(panel(chat).locator(".component-card[data-component-name=BarChart]")).to_be_visible()
    answered(chat)
    assert distance_from_bottom(chat) < 80

    send(chat, "!stream 2500")
    answered(chat)
    assert distance_from_bottom(chat) < 80


def test_it_stops_following_once_the_person_scrolls_up(chat):
    send(chat, "!stream 2500")
    answered(chat)
    send(chat, "!slow")
    expect(panel(chat).locator(".msg-assistant .block-text").last).to_contain_text("word10")
    chat.eval_on_selector(LIST, "l => { l.scrollTop = 100; }")
    expect(panel(chat).locator(".msg-assistant .block-text").last).to_contain_text("word40", timeout=30_000)
    assert chat.eval_on_selector(LIST, "l => l.scrollTop") == 100
    panel(chat).locator("[data-role=stop]").click()
    expect(state(chat)).to_have_text("cancelled")

    # Back at the bottom, it follows again.
    send(chat, "!stream 2500")
    answered(chat)
    assert distance_from_bottom(chat) < 80
