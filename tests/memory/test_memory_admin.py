"""The admin's memories page (docs/memory.md#the-admin): search, edit, forget; never a hard delete."""
from __future__ import annotations

import pytest

from memory.models import Memory
from memory.services import memory_save
from tests.support.admin import admin_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def memories(project):
    tea = memory_save(project=project, user_key="alice", content="Alice likes green tea.", category="preference").memory
    oslo = memory_save(project=project, user_key="bob", content="Bob lives in Oslo.", category="fact").memory
    return tea, oslo


def test_the_list_searches_by_text_and_user(admin_client, memories):
    page = admin_client.get(admin_url(Memory, "changelist"), {"q": "green tea"}).content.decode()
    assert "Alice likes green tea." in page and "Bob lives in Oslo." not in page

    page = admin_client.get(admin_url(Memory, "changelist"), {"q": "bob"}).content.decode()
    assert "Bob lives in Oslo." in page and "green tea" not in page


def test_a_memory_is_edited_through_the_same_checks(admin_client, memories, project):
    tea, _ = memories
    memory_save(project=project, user_key="alice", content="Alice works in Bergen.", category="fact")
    url = admin_url(Memory, "change", tea.pk)
    assert admin_client.get(url).status_code == 200

    response = admin_client.post(url, {"content": "Alice prefers  black tea", "category": "preference",
                                       "importance": 5})
    assert response.status_code == 302, response.content.decode()[:2000]
    tea.refresh_from_db()
    assert (tea.content, tea.importance) == ("Alice prefers black tea", 5)

    # What another of her live memories says already is refused, as are the rules' limits.
    for content, importance in (("alice works in bergen", 3), ("x" * 1001, 3), ("fine", 9)):
        response = admin_client.post(url, {"content": content, "category": "fact", "importance": importance})
        assert response.status_code == 200 and b"errornote" in response.content
    tea.refresh_from_db()
    assert tea.content == "Alice prefers black tea"


def test_the_action_forgets_without_deleting(admin_client, memories):
    tea, oslo = memories
    response = admin_client.post(admin_url(Memory, "changelist"),
                                 {"action": "forget_selected", "_selected_action": [tea.pk]})

    assert response.status_code == 302
    tea.refresh_from_db()
    oslo.refresh_from_db()
    assert tea.deleted_at is not None and oslo.deleted_at is None
    assert Memory.objects.count() == 2
    assert admin_client.get(admin_url(Memory, "delete", tea.pk)).status_code == 403
    page = admin_client.get(admin_url(Memory, "changelist"), {"state": "forgotten"}).content.decode()
    assert "Alice likes green tea." in page and "Oslo" not in page
