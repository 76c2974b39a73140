"""The admin shows threads driven through POST /v1/agui like the others, with their external id."""
import pytest
from django.urls import reverse

from projects.models import Project
from tests.support.admin import admin_url
from threads import services
from threads.models import Thread

pytestmark = pytest.mark.django_db


# `admin_client` is pytest-django's: a logged-in superuser.


@pytest.fixture
def threads(db):
    project = Project.objects.create(name="agui-admin")
    agui = services.thread_create(project=project, user_key="alice", external_id="conv-from-ag-ui")
    services.message_create(thread=agui, role="user", content=[{"type": "text", "text": "hi"}],
                            external_id="client-message-1")
    v1 = services.thread_create(project=project, user_key="alice", name="A /v1 thread")
    return agui, v1


def test_the_thread_list_shows_both_kinds_of_thread_and_leaves_the_external_id_to_the_thread_page(admin_client,
                                                                                                     threads):
    # The list fits 1280 px with fewer columns (issue 35): the external id is on the thread's page (below)
    # and found by the list's search.
    agui, v1 = threads

    page = admin_client.get(reverse("admin:threads_thread_changelist")).content.decode()

    assert agui.id in page and v1.id in page
    assert "column-external_id" not in page


def test_threads_are_found_by_their_external_id(admin_client, threads):
    agui, v1 = threads

    page = admin_client.get(reverse("admin:threads_thread_changelist"), {"q": "conv-from"}).content.decode()

    assert agui.id in page and v1.id not in page


def test_the_thread_page_shows_its_external_id_and_its_messages_client_ids(admin_client, threads):
    agui, _ = threads

    page = admin_client.get(admin_url(Thread, "change", agui.id)).content.decode()

    assert "conv-from-ag-ui" in page and "client-message-1" in page
