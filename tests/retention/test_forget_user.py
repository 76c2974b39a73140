"""Forgetting one end user: DELETE /v1/users/{userKey} (the admin's staff) and manage.py forget_user
(retention/forget.py, docs/operations.md#retention-and-deletion)."""
from __future__ import annotations

import io
import json
import time

import pytest
import requests
from django.contrib.auth.models import User
from django.core.management import call_command

from memory.services import memory_forget, memory_save
from projects.config import Limits, ProjectSettings, project_settings_save
from runs.lock import lock_held
from runs.models import Run, RunEvent
from tests.support.images import image_part, png
from tests.support.problems import assert_problem
from tests.support.sse import read_events
from tests.retention.user_rows import BY_ID, user_paths, user_row_counts
from threads import services
from threads.models import Message, Suggestion, Thread
from tools.models import McpAuthorization, McpServer, McpToken

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]


def run_as(api, user_key: str, *content: dict, thread_id: str | None = None) -> str:
    path = f"/v1/threads/{thread_id}/runs" if thread_id else "/v1/threads/runs"
    body = {"userKey": user_key, "message": {"role": "user", "content": list(content)}}
    if thread_id:
        body["previousRunId"] = Thread.objects.get(id=thread_id).last_completed_run_id
    response = api.post(path, body, stream=True)
    assert response.status_code == 200, response.text
    read_events(response)
    return thread_id or response.headers["X-Thread-Id"]


def seed(api, project, user_key: str) -> None:
    """Two threads with runs (one with an image), a suggestion, limit counters, usage rows and
    memories, one of them forgotten."""
    first = run_as(api, user_key, {"type": "text", "text": "hello"}, image_part(png(4, 4)))
    run_as(api, user_key, {"type": "text", "text": "again"}, thread_id=first)
    run_as(api, user_key, {"type": "text", "text": "another thread"})
    answer = Message.objects.filter(thread_id=first, role="assistant").first()
    Suggestion.objects.create(message=answer, title="More?")
    memory_save(project=project, user_key=user_key, content=f"{user_key} likes tea", category="preference")
    gone = memory_save(project=project, user_key=user_key, content=f"{user_key} lives in Oslo", category="fact")
    memory_forget(project=project, user_key=user_key, memory_id=gone.memory.pk)
    # A grant and an unfinished authorisation for a protected MCP server (tools/mcp_vault.py).
    server, _ = McpServer.objects.get_or_create(project=project, name="vaulted", defaults={
        "transport": "http", "url": "http://127.0.0.1:9/mcp", "auth": "user", "enabled": False})
    McpToken.objects.create(server=server, project=project, user_key=user_key, tokens="sealed")
    McpAuthorization.objects.create(server=server, user_key=user_key, state=f"state-{user_key}", flow="sealed")


def wait_for_event_log(project, user_key: str) -> dict[str, int]:
    """The user's rows, once the server's event-log writer has written every event of their runs (the
    final one of each run last)."""
    runs = Run.objects.filter(thread__project=project, thread__user_key=user_key)
    deadline = time.monotonic() + 10
    while (RunEvent.objects.filter(run_id__in=runs.values("id"), final=True).count() < runs.count()
           and time.monotonic() < deadline):
        time.sleep(0.05)
    return user_row_counts(project, user_key)


@pytest.fixture
def counted_project(project):
    # A per-user run rate keeps limit counters for each user.
    project_settings_save(project, ProjectSettings(limits=Limits(runs_per_minute_per_user=1000)))
    return project


def staff_session(base_url: str, *, staff: bool = True) -> requests.Session:
    user = User.objects.create_user("operator", password="pw-operator-1", is_staff=staff, is_superuser=staff)
    session = requests.Session()
    # The admin's login takes staff only; the page's takes anyone.
    login = "/admin/login/?next=/admin/" if staff else "/login/?next=/"
    session.get(base_url + login, timeout=30)
    response = session.post(base_url + login, timeout=30, allow_redirects=False,
                            data={"username": user.username, "password": "pw-operator-1",
                                  "csrfmiddlewaretoken": session.cookies["csrftoken"]})
    assert response.status_code == 302, response.text
    session.headers["X-CSRFToken"] = session.cookies["csrftoken"]
    return session


def test_every_table_is_found():
    paths = user_paths()
    assert {"threads.Thread", "threads.Message", "threads.Suggestion", "runs.Run", "telemetry.Usage",
            "projects.LimitCounter", "memory.Memory", "tools.McpToken", "tools.McpAuthorization"} <= set(paths)
    assert all(owner in paths for _, owner in BY_ID.values())


def test_it_removes_every_row_of_the_user_and_none_of_another(api, counted_project, live_server_url):
    seed(api, counted_project, "alice")
    seed(api, counted_project, "bob")
    alice = wait_for_event_log(counted_project, "alice")
    bob = wait_for_event_log(counted_project, "bob")
    assert all(alice.values()) and all(bob.values()), (alice, bob)  # every table held rows of both

    session = staff_session(live_server_url)
    response = session.delete(f"{live_server_url}/v1/users/alice", params={"project": counted_project.name},
                              timeout=60)

    assert response.status_code == 200, response.text
    removed = response.json()["removed"]
    assert removed == {"threads": alice["threads.Thread"], "messages": alice["threads.Message"],
                       "suggestions": alice["threads.Suggestion"], "runs": alice["runs.Run"],
                       "runEvents": alice["runs.RunEvent"], "limitCounters": alice["projects.LimitCounter"],
                       "memories": alice["memory.Memory"],
                       "mcpGrants": alice["tools.McpToken"] + alice["tools.McpAuthorization"],
                       "usageRowsAnonymized": alice["telemetry.Usage"], "threadsBusy": 0}
    assert user_row_counts(counted_project, "alice") == dict.fromkeys(alice, 0)
    assert user_row_counts(counted_project, "bob") == bob
    # What was spent still adds up: the usage rows stay, without the user.
    assert counted_project.usage_records.filter(user_key="").count() == alice["telemetry.Usage"]


def test_the_command_removes_the_user_and_prints_the_counts(api, counted_project, live_server_url):
    seed(api, counted_project, "alice")
    seed(api, counted_project, "bob")
    alice = wait_for_event_log(counted_project, "alice")
    bob = wait_for_event_log(counted_project, "bob")
    out = io.StringIO()

    call_command("forget_user", "--project", counted_project.name, "--user", "alice", stdout=out)

    report = json.loads(out.getvalue())
    assert report["removed"]["threads"] == 2 and report["removed"]["messages"] == alice["threads.Message"]
    assert report["removed"]["memories"] == alice["memory.Memory"] == 2
    assert user_row_counts(counted_project, "alice") == dict.fromkeys(alice, 0)
    assert user_row_counts(counted_project, "bob") == bob


def test_a_thread_with_a_live_run_is_kept_and_answered_409(counted_project, live_server_url):
    idle = services.thread_create(project=counted_project, user_key="alice")
    busy = services.thread_create(project=counted_project, user_key="alice")
    with lock_held(thread_id=busy.id, run_id="run_live"):
        pass
    session = staff_session(live_server_url)

    response = session.delete(f"{live_server_url}/v1/users/alice", params={"project": counted_project.name},
                              timeout=60)

    body = assert_problem(response, 409, "RUN_ACTIVE")
    assert body["removed"]["threads"] == 1 and body["removed"]["threadsBusy"] == 1
    assert list(Thread.objects.filter(user_key="alice").values_list("id", flat=True)) == [busy.id]
    assert not Thread.objects.filter(id=idle.id).exists()


def test_only_the_admins_staff_may_forget_a_user(api, counted_project, live_server_url):
    services.thread_create(project=counted_project, user_key="alice")
    url = f"{live_server_url}/v1/users/alice"
    params = {"project": counted_project.name}

    assert_problem(api.session.delete(url, params=params, timeout=30), 403, "FORBIDDEN")  # a project key
    assert_problem(requests.delete(url, params=params, timeout=30), 401, "UNAUTHORIZED")
    assert_problem(staff_session(live_server_url, staff=False).delete(url, params=params, timeout=30),
                   403, "FORBIDDEN")
    assert Thread.objects.filter(user_key="alice").count() == 1


def test_a_staff_request_without_the_csrf_token_is_refused(counted_project, live_server_url):
    services.thread_create(project=counted_project, user_key="alice")
    session = staff_session(live_server_url)
    del session.headers["X-CSRFToken"]

    assert_problem(session.delete(f"{live_server_url}/v1/users/alice", params={"project": counted_project.name},
                                  timeout=30), 403, "CSRF_FAILED")
    assert Thread.objects.filter(user_key="alice").count() == 1


def test_it_names_an_unknown_project(counted_project, live_server_url):
    session = staff_session(live_server_url)

    assert_problem(session.delete(f"{live_server_url}/v1/users/alice", params={"project": "nope"}, timeout=30),
                   404, "PROJECT_NOT_FOUND")
