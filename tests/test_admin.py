"""The admin: every model's list and change pages render; a new API key is shown once."""
import re

import pytest

from projects.auth import api_key_find
from projects.models import ApiKey, Project
from runs.lock import lock_held
from runs.models import Run
from tests.support.admin import admin_url
from threads import services
from threads.models import Message, Thread
from tools.models import McpServer, McpToken, ProjectTool

pytestmark = pytest.mark.django_db


# `admin_client` is pytest-django's: a logged-in superuser.


@pytest.fixture
def rows(db):
    project = Project.objects.create(name="admin-project")
    key, _ = ApiKey.generate(project, "admin key")
    thread = services.thread_create(project=project, user_key="alice", name="Admin thread")
    message = services.message_create(thread=thread, role="user",
                                      content=[{"type": "text", "text": "visible in the inline"}])
    with lock_held(thread_id=thread.id, run_id="run_admin") as locked:
        Run.objects.create(id="run_admin", thread=locked, model="offline")
    mcp = McpServer.objects.create(project=project, name="files", command="mcp-files")
    tool = ProjectTool.objects.create(project=project, name="current_time")
    secured = McpServer.objects.create(project=project, name="secured", transport="http", url="https://mcp.example/mcp",
                                       auth="user")
    grant = McpToken.objects.create(server=secured, project=project, user_key="alice", tokens="fernet:sealed",
                                    scope="read", expires_at=2_000_000_000.0)
    return {Project: project, ApiKey: key, Thread: thread, Message: message, Run: Run.objects.get(),
            McpServer: mcp, ProjectTool: tool, McpToken: grant}


MODELS = [Project, ApiKey, Thread, Message, Run, McpServer, ProjectTool, McpToken]


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


def test_an_mcp_servers_client_secret_is_stored_encrypted_and_never_shown_back(admin_client, rows, settings):
    from cryptography.fernet import Fernet

    settings.SECRETS_KEYS = [Fernet.generate_key().decode()]
    server = rows[McpServer]
    form = {"project": server.project_id, "name": "files", "transport": "http", "command": "", "args": "[]",
            "env": "{}", "url": "https://mcp.example/mcp", "headers": "{}", "enabled": "on", "auth": "project",
            "oauth_scopes": "read", "oauth_client_id": "my-app", "oauth_client_secret": "s3cret-value-1234"}
    assert admin_client.post(_url(McpServer, "change", server.pk), form).status_code == 302
    stored = McpServer.objects.get(pk=server.pk).oauth_client_secret
    assert stored.startswith("fernet:") and "s3cret" not in stored
    page = admin_client.get(_url(McpServer, "change", server.pk)).content.decode()
    assert "s3cret-value-1234" not in page and stored not in page
    assert "stored (…1234)" in page and "Authorise" in page
    # Saved again with the field left blank: the stored secret stays.
    assert admin_client.post(_url(McpServer, "change", server.pk), {**form, "oauth_client_secret": ""}).status_code == 302
    assert McpServer.objects.get(pk=server.pk).oauth_client_secret == stored
