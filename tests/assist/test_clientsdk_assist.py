"""The Python client's thread names and suggestions against the live server (offline model)."""
from __future__ import annotations

import pytest

from clientsdk import Client
from clientsdk.errors import APIStatusError
from tests.assist.conftest import DATA_CARD

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client(live_server_url, api_key):
    with Client(live_server_url, api_key, "alice", timeout=30, max_retries=0) as c:
        yield c


def test_the_client_names_a_thread(client, chat, project):
    thread, _ = chat

    named = client.threads.generate_name(thread.id)

    assert named.name == "Which city has the most bridges?"
    assert named.project_id == project.id
    assert client.threads.retrieve(thread.id).name == named.name


def test_the_client_creates_and_pages_suggestions(client, chat):
    thread, answer = chat

    made = client.threads.suggestions.create(thread.id, answer.id, max_suggestions=2,
                                             available_components=[DATA_CARD])
    first = client.threads.suggestions.list(thread.id, answer.id, limit=1)
    second = client.threads.suggestions.list(thread.id, answer.id, limit=1, cursor=first.next_cursor)

    assert [s.title for s in made.suggestions] == ["Show DataCard", "Tell me more"]
    assert made.suggestions[0].message_id == answer.id
    assert first.has_more and not second.has_more
    assert first.suggestions + second.suggestions == made.suggestions


def test_the_client_raises_the_problem_for_a_user_message(client, chat):
    thread, _ = chat
    question = thread.messages.get(role="user")

    with pytest.raises(APIStatusError) as caught:
        client.threads.suggestions.create(thread.id, question.id)

    assert (caught.value.status_code, caught.value.code) == (404, "MESSAGE_NOT_FOUND")
