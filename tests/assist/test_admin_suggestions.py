"""The admin shows a message's suggestions, read-only, in the model's order."""
from __future__ import annotations

import html

import pytest

from tests.assist.conftest import BAR_CHART, DATA_CARD
from tests.assist.test_suggestions import generate
from tests.support.admin import admin_url
from threads.models import Message

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_message_page_lists_its_suggestions_read_only(api, chat, admin_client):
    thread, answer = chat
    made = generate(api, thread.id, answer.id, availableComponents=[DATA_CARD, BAR_CHART]).json()["suggestions"]

    response = admin_client.get(admin_url(Message, "change", answer.id))

    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    positions = [page.index(s["id"]) for s in made]
    assert positions == sorted(positions)
    assert "Show BarChart" in page and DATA_CARD["description"] in page
    # Read-only: no form fields for the suggestions, and no way to add one.
    assert 'name="suggestions-0-title"' not in page
    assert 'name="suggestions-MAX_NUM_FORMS" value="0"' in page
