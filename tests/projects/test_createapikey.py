"""`python manage.py createapikey`: the key is printed once, alone on the last line of stdout."""
import os
import subprocess
import sys

import pytest

from projects.models import ApiKey, Project
from tests.conftest import Api
from tests.support.live import ROOT, database_url

pytestmark = pytest.mark.django_db(transaction=True)


def _createapikey(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": database_url()}
    return subprocess.run([sys.executable, "manage.py", "createapikey", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60, check=True)


def test_it_prints_a_working_key_alone_on_the_last_line(live_server_url):
    done = _createapikey("--project", "acme", "--name", "ci")

    key = done.stdout.strip().splitlines()[-1]
    assert key.startswith("tk_") and " " not in key
    api = Api(live_server_url, key)
    created = api.post("/v1/threads", {"userKey": "alice"})
    assert created.status_code == 201, created.text
    assert api.get(f"/v1/threads/{created.json()['id']}").status_code == 200


def test_it_creates_the_project_and_stores_only_a_hash(live_server_url):
    done = _createapikey("--project", "acme")

    key = done.stdout.strip().splitlines()[-1]
    stored = ApiKey.objects.get(project=Project.objects.get(name="acme"))
    assert stored.hashed_key != key and key not in stored.hashed_key
    assert key.startswith(stored.prefix)


def test_keys_of_one_project_share_its_threads(live_server_url, project):
    first = _createapikey("--project", project.name).stdout.strip().splitlines()[-1]
    second = _createapikey("--project", project.name).stdout.strip().splitlines()[-1]

    thread = Api(live_server_url, first).post("/v1/threads", {"userKey": "alice"}).json()

    assert first != second
    assert Api(live_server_url, second).get(f"/v1/threads/{thread['id']}").status_code == 200
