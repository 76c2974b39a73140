"""A database made by the code from before the projects app migrates to it and keeps working.

Until PREVIOUS_LAYOUT, Project and ApiKey were models of the threads app. The code of that commit is
taken from git, migrates a database of its own and fills it through its own manage.py; then this
code migrates the same database, and a server of this code must still accept the old key, list the
old thread and its messages, and find the old tool enabled, with no migration left to apply.

On PostgreSQL the database is a throwaway one on the test server; on SQLite (bin/test's both_dbs
run) a file of the test's own.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Iterator

import pytest
import requests
from django.conf import settings

from tests.support.live import ROOT, LiveServer

pytestmark = pytest.mark.both_dbs

# The last commit with Project and ApiKey in threads (main when the projects app was started); CI
# clones the whole history, so it is always there.
PREVIOUS_LAYOUT = "2b4eeb6129a49185166af98dc25f3faa7d3edde3"
TOOL = "current_time"

# Run by the previous code's `manage.py shell`: a thread with messages, an enabled tool, and an operator
# allowed to change projects, through that code's own services and models.
OLD_FILL = """
import json
from django.contrib.auth.models import Permission, User
from threads import services
from threads.models import Project
from tools.models import ProjectTool

project = Project.objects.get(name="legacy")
thread = services.thread_create(project=project, user_key="alice", name="from before")
messages = [services.message_create(thread=thread, role=role, content=[{"type": "text", "text": text}]).id
            for role, text in (("user", "hello"), ("assistant", "hi, alice"))]
ProjectTool.objects.create(project=project, name=%(tool)r, enabled=True)
operator = User.objects.create_user("operator", is_staff=True)
operator.user_permissions.add(Permission.objects.get(content_type__app_label="threads", codename="change_project"))
print(json.dumps({"thread": thread.id, "messages": messages}))
"""

# Run by this code's `manage.py shell` once it has migrated the database.
NEW_CHECK = """
import json
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from projects.models import Project
from tools.selectors import project_tools_of

project = Project.objects.get(name="legacy")
print(json.dumps({
    "tools": project_tools_of(project).enabled,
    "keys": project.api_keys.count(),
    "operator_may_change_projects": User.objects.get(username="operator").has_perm("projects.change_project"),
    "content_types": sorted(ContentType.objects.filter(model__in=["project", "apikey"])
                            .values_list("app_label", "model")),
    "tables": sorted(t for t in connection.introspection.table_names() if "project" in t or "apikey" in t),
}))
"""


@pytest.fixture(scope="module")
def previous_code(tmp_path_factory) -> Path:
    """The tree of PREVIOUS_LAYOUT, extracted from git."""
    tree = tmp_path_factory.mktemp("previous-layout")
    archive = subprocess.run(["git", "archive", "--format=tar", PREVIOUS_LAYOUT], cwd=ROOT, capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


@pytest.fixture
def database_url(tmp_path) -> Iterator[str]:
    """An empty database of the kind the tests run on, dropped afterwards."""
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        yield f"sqlite:///{tmp_path / 'previous-layout.sqlite3'}"
        return
    import psycopg

    name = f"tambo_migrate_{uuid.uuid4().hex[:12]}"
    server = dict(host=db["HOST"], port=db["PORT"], user=db["USER"], password=db.get("PASSWORD") or None)
    with psycopg.connect(dbname="postgres", autocommit=True, **server) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgres://{db['USER']}:{db.get('PASSWORD') or ''}@{db['HOST']}:{db['PORT']}/{name}"
    finally:
        with psycopg.connect(dbname="postgres", autocommit=True, **server) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def manage(code: Path, url: str, *args: str) -> str:
    """Runs `manage.py` of the tree `code` on the database `url`; returns its stdout, fails on an error."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "SQLITE_PATH")}
    env.update(DATABASE_URL=url, LOG_LEVEL="WARNING", MODEL_PROVIDER="offline")
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=code, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"manage.py {' '.join(args)} in {code} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def last_line(output: str) -> str:
    # What a command prints for the test comes last: `shell` first tells what it imported.
    return output.strip().splitlines()[-1]


def test_a_database_of_the_previous_layout_migrates_and_keeps_its_keys_threads_and_tools(
        previous_code, database_url):
    manage(previous_code, database_url, "migrate", "-v", "0")
    key = last_line(manage(previous_code, database_url, "createapikey", "--project", "legacy"))
    made = json.loads(last_line(manage(previous_code, database_url, "shell", "-c", OLD_FILL % {"tool": TOOL})))

    manage(ROOT, database_url, "migrate", "-v", "0")

    manage(ROOT, database_url, "migrate", "--check")  # exits non-zero with a migration left to apply
    plan = manage(ROOT, database_url, "showmigrations", "--plan")
    assert "[ ]" not in plan and "projects.0003_content_types_from_threads" in plan
    server = LiveServer("previous-layout", extra_env={"DATABASE_URL": database_url})
    try:
        headers = {"x-api-key": key}
        threads = requests.get(f"{server.url}/v1/threads", params={"userKey": "alice"}, headers=headers, timeout=30)
        messages = requests.get(f"{server.url}/v1/threads/{made['thread']}/messages", params={"userKey": "alice"},
                                headers=headers, timeout=30)
    finally:
        server.stop()
    assert threads.status_code == 200, threads.text
    assert [(t["id"], t["name"]) for t in threads.json()["threads"]] == [(made["thread"], "from before")]
    assert messages.status_code == 200, messages.text
    assert [m["id"] for m in messages.json()["messages"]] == made["messages"]
    state = json.loads(last_line(manage(ROOT, database_url, "shell", "-c", NEW_CHECK)))
    assert state["tools"] == [TOOL]
    assert state["keys"] == 1
    # The content types were relabelled, not made again: the permission granted before still holds.
    assert state["operator_may_change_projects"] is True
    assert state["content_types"] == [["projects", "apikey"], ["projects", "project"]]
    assert state["tables"] == ["projects_apikey", "projects_limit_counter", "projects_project",
                               "projects_project_members", "tools_projecttool"]
