"""A database made by the last release migrates to this code and keeps working.

LAST_RELEASE is the main before the project settings, the user-key namespaces, the limit counters,
the usage records, reasoning and the answered model were added. Its code, taken from git, migrates
a database of its own and fills it through its own `manage.py`; then this code migrates the same
database. A server of this code must accept the old key, list the old API user's thread, and keep the
old page login's thread out of reach of a `userKey` (the namespaces' data migration), with no
migration left to apply. The machinery (a throwaway database, running another tree's manage.py) is
the one of test_migrate_from_previous_layout.py.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import requests

from tests.projects.test_migrate_from_previous_layout import database_url, last_line, manage  # noqa: F401
from tests.support.live import ROOT, LiveServer

pytestmark = pytest.mark.both_dbs

# The main of the last landing before this layout; CI clones the whole history, so it is always there.
LAST_RELEASE = "69b33edbd8814d76ab96d20c655a2501e8217ea4"

# Run by the last release's `manage.py shell`: a thread of an API user and one of a page login
# (the page's users were `web-user-<pk>` then), through that code's own services.
OLD_FILL = """
import json
from django.contrib.auth.models import User
from projects.models import Project
from threads import services

project = Project.objects.get(name="legacy")
api_thread = services.thread_create(project=project, user_key="alice", name="from the api")
services.message_create(thread=api_thread, role="user", content=[{"type": "text", "text": "hello"}])
login = User.objects.create_user("pageuser")
page_thread = services.thread_create(project=project, user_key=f"web-user-{login.pk}", name="from the page")
print(json.dumps({"api_thread": api_thread.id, "page_thread": page_thread.id, "login": login.pk}))
"""

NEW_CHECK = """
import json
from projects.config import project_settings
from projects.models import Project
from threads.models import Thread

project = Project.objects.get(name="legacy")
print(json.dumps({"user_keys": sorted(Thread.objects.values_list("user_key", flat=True)),
                  "token_required": project_settings(project).token_required,
                  "has_token_secret": bool(project.access_token_secret)}))
"""


@pytest.fixture(scope="module")
def last_release(tmp_path_factory) -> Path:
    tree = tmp_path_factory.mktemp("last-release")
    archive = subprocess.run(["git", "archive", "--format=tar", LAST_RELEASE], cwd=ROOT, capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def test_a_database_of_the_last_release_migrates_and_keeps_its_users_apart(last_release, database_url):  # noqa: F811
    manage(last_release, database_url, "migrate", "-v", "0")
    key = last_line(manage(last_release, database_url, "createapikey", "--project", "legacy"))
    made = json.loads(last_line(manage(last_release, database_url, "shell", "-c", OLD_FILL)))

    manage(ROOT, database_url, "migrate", "-v", "0")

    manage(ROOT, database_url, "migrate", "--check")  # exits non-zero with a migration left to apply
    state = json.loads(last_line(manage(ROOT, database_url, "shell", "-c", NEW_CHECK)))
    assert state["user_keys"] == sorted(["alice", f"login:{made['login']}"])
    assert state["token_required"] is False
    assert state["has_token_secret"] is True
    server = LiveServer("last-release", extra_env={"DATABASE_URL": database_url})
    try:
        headers = {"x-api-key": key}
        alice = requests.get(f"{server.url}/v1/threads", params={"userKey": "alice"}, headers=headers, timeout=30)
        # The old page login's name, sent as a userKey, names a different (empty) user now.
        as_login = requests.get(f"{server.url}/v1/threads", params={"userKey": f"web-user-{made['login']}"},
                                headers=headers, timeout=30)
        run = requests.post(f"{server.url}/v1/threads/{made['api_thread']}/runs", headers=headers, timeout=60,
                            json={"message": {"role": "user", "content": [{"type": "text", "text": "again"}]},
                                  "userKey": "alice"})
    finally:
        server.stop()
    assert alice.status_code == 200, alice.text
    assert [t["id"] for t in alice.json()["threads"]] == [made["api_thread"]]
    assert as_login.status_code == 200, as_login.text
    assert as_login.json()["threads"] == []
    assert run.status_code == 200, run.text
    assert "RUN_FINISHED" in run.text
