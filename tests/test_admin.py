"""The admin: every model's list and change pages render; a new API key is shown once."""
import re

import pytest

from projects.auth import api_key_find
from projects.models import ApiKey, Project
from runs.lock import lock_take
from runs.models import Run
from tests.support.admin import admin_url
from threads import services
from threads.models import Message, Thread
from tools.models import McpServer, ProjectTool

pytestmark = pytest.mark.django_db


# `admin_client` is pytest-django's: a logged-in superuser.


@pytest.fixture
def rows(db):
    project = Project.objects.create(name="admin-project")
    key, _ = ApiKey.generate(project, "admin key")
    thread = services.thread_create(project=project, user_key="alice", name="Admin thread")
    message = services.message_create(thread=thread, role="user",
                                      content=[{"type": "text", "text": "visible in the inline"}])
    lock_take(thread_id=thread.id, run_id="run_admin",
              in_lock=lambda locked: Run.objects.create(id="run_admin", thread=locked, model="offline"))
    mcp = McpServer.objects.create(project=project, name="files", command="mcp-files")
    tool = ProjectTool.objects.create(project=project, name="current_time")
    return {Project: project, ApiKey: key, Thread: thread, Message: message, Run: Run.objects.get(),
            McpServer: mcp, ProjectTool: tool}


MODELS = [Project, ApiKey, Thread, Message, Run, McpServer, ProjectTool]


def _url(model, view: str, *args) -> str:
    return admin_url(model, view, *args)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_the_changelist_renders(admin_client, rows, model):
    response = admin_client.get(_url(model, "changelist"))

    assert response.status_code == 200
    assert str(rows[model].pk) in response.content.decode() or str(rows[model]) in response.content.decode()


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_the_change_view_renders(admin_client, rows, model):
    response = admin_client.get(_url(model, "change", rows[model].pk))

    assert response.status_code == 200


def test_the_thread_page_shows_its_messages_and_runs(admin_client, rows):
    page = admin_client.get(_url(Thread, "change", rows[Thread].pk)).content.decode()

    assert "visible in the inline" in page
    assert "run_admin" in page


def test_the_pages_need_a_staff_login(client, rows):
    response = client.get(_url(Thread, "changelist"))

    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_adding_an_api_key_shows_the_full_key_once(admin_client, rows):
    project = rows[Project]

    response = admin_client.post(_url(ApiKey, "add"), {"project": project.pk, "name": "from admin"}, follow=True)

    assert response.status_code == 200
    created = ApiKey.objects.get(name="from admin")
    [raw] = [key for key in re.findall(r"tk_[A-Za-z0-9_-]+", response.content.decode()) if len(key) > 20]
    assert raw.startswith(created.prefix)
    assert api_key_find(raw).project == project
    # Not shown again: the key's own page has only its prefix.
    assert raw not in admin_client.get(_url(ApiKey, "change", created.pk)).content.decode()
