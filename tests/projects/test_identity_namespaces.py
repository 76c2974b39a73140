"""Token users, `userKey`s and page logins are three namespaces no request can name across.

Each pair is tried over HTTP the way the security sweep did (docs/abuse-and-limits.md): the owner works
through their own kind of identity, the intruder names the owner through another kind.
"""
from __future__ import annotations

import importlib

import pytest
import requests
from django.apps import apps

from projects.identities import login_user, token_user
from tests.support.problems import assert_problem
from tests.support.user_tokens import access_token, configure_hs256, sign_hs256
from threads import services
from threads.models import Thread

pytestmark = pytest.mark.django_db(transaction=True)


def _bearer(base_url: str, api_key: str, user: str) -> requests.Session:
    session = requests.Session()
    session.headers.update({"x-api-key": api_key,
                            "Authorization": f"Bearer {access_token(base_url, api_key, sign_hs256(user=user))}"})
    return session


def _login_session(django_user_model, username: str) -> tuple[requests.Session, int]:
    from django.test import Client

    user = django_user_model.objects.create_user(username, password="pw")
    browser = Client()
    browser.force_login(user)
    session = requests.Session()
    session.cookies.set("sessionid", browser.cookies["sessionid"].value)
    return session, user.pk


def _listed(response: requests.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [thread["id"] for thread in response.json()["threads"]]


def test_a_user_key_naming_a_token_user_reads_none_of_their_threads(live_server_url, api_key, project):
    configure_hs256(project)
    victim = _bearer(live_server_url, api_key, "victim")
    created = victim.post(live_server_url + "/v1/threads", json={"metadata": {"secret": 1}}, timeout=30)
    assert created.status_code == 201, created.text

    as_key = requests.get(live_server_url + "/v1/threads", params={"userKey": "victim"},
                          headers={"x-api-key": api_key}, timeout=30)
    by_id = requests.get(f"{live_server_url}/v1/threads/{created.json()['id']}", params={"userKey": "victim"},
                         headers={"x-api-key": api_key}, timeout=30)

    assert _listed(as_key) == []
    assert_problem(by_id, 404, "THREAD_NOT_FOUND")
    assert _listed(victim.get(live_server_url + "/v1/threads", timeout=30)) == [created.json()["id"]]
    # The token user still sees the user its app named.
    assert created.json()["userKey"] == "victim"


def test_a_token_user_reads_none_of_a_user_keys_threads(live_server_url, api_key, project):
    configure_hs256(project)
    owned = services.thread_create(project=project, user_key="alice")

    intruder = _bearer(live_server_url, api_key, "alice")

    assert _listed(intruder.get(live_server_url + "/v1/threads", timeout=30)) == []
    assert_problem(intruder.get(f"{live_server_url}/v1/threads/{owned.id}", timeout=30), 404, "THREAD_NOT_FOUND")


@pytest.mark.parametrize("named", ["web-user-{pk}", "login:{pk}"])
def test_a_user_key_naming_a_page_login_reads_none_of_its_threads(live_server_url, api_key, project,
                                                                   django_user_model, named):
    page, pk = _login_session(django_user_model, "page-owner")
    # The page's project is the login's project (projects/auth.py principal_for_user).
    project.members.add(pk)
    created = page.post(live_server_url + "/v1/threads", json={}, timeout=30,
                        headers={"X-CSRFToken": "a" * 32}, cookies={"csrftoken": "a" * 32})
    assert created.status_code == 201, created.text

    response = requests.get(live_server_url + "/v1/threads", params={"userKey": named.format(pk=pk)},
                            headers={"x-api-key": api_key}, timeout=30)

    if named.startswith("login:"):
        assert_problem(response, 400, "VALIDATION_ERROR", field="userKey")
    else:
        assert _listed(response) == []
    assert Thread.objects.get(id=created.json()["id"]).user_key == login_user(pk)


@pytest.mark.parametrize("prefix", ["token:", "login:"])
def test_a_user_key_with_a_reserved_prefix_is_refused(live_server_url, api_key, project, prefix):
    response = requests.post(live_server_url + "/v1/threads", json={"userKey": prefix + "alice"},
                             headers={"x-api-key": api_key}, timeout=30)

    assert_problem(response, 400, "VALIDATION_ERROR", field="userKey")


@pytest.mark.parametrize("subject", ["web-user-{pk}", "login:{pk}"])
def test_a_token_user_naming_a_page_login_reads_none_of_its_threads(live_server_url, api_key, project,
                                                                     django_user_model, subject):
    configure_hs256(project)
    login = django_user_model.objects.create_user("page-owner", password="pw")
    owned = services.thread_create(project=project, user_key=login_user(login.pk))

    intruder = _bearer(live_server_url, api_key, subject.format(pk=login.pk))

    assert _listed(intruder.get(live_server_url + "/v1/threads", timeout=30)) == []
    assert_problem(intruder.get(f"{live_server_url}/v1/threads/{owned.id}", timeout=30), 404, "THREAD_NOT_FOUND")


def test_a_page_login_sees_only_its_own_threads(live_server_url, project, django_user_model):
    page, pk = _login_session(django_user_model, "page-owner")
    project.members.add(pk)
    services.thread_create(project=project, user_key=token_user(str(pk)))
    services.thread_create(project=project, user_key=str(pk))
    services.thread_create(project=project, user_key=f"web-user-{pk}")
    own = services.thread_create(project=project, user_key=login_user(pk))

    assert _listed(page.get(live_server_url + "/v1/threads", timeout=30)) == [own.id]


def test_the_migration_sorts_existing_rows_into_the_namespaces(project, other_project_key):
    from projects.models import Project

    migration = importlib.import_module("threads.migrations.0005_user_key_namespaces")
    configure_hs256(project)
    plain = Project.objects.get(name="other-project")
    rows = {
        "page": services.thread_create(project=plain, user_key="web-user-7"),
        "key": services.thread_create(project=plain, user_key="alice"),
        "would-name-a-token-user": services.thread_create(project=plain, user_key="token:bob"),
        "token": services.thread_create(project=project, user_key="carol"),
        "page-in-token-project": services.thread_create(project=project, user_key="web-user-8"),
    }

    migration.forwards(apps, None)

    stored = {name: Thread.objects.get(id=row.id).user_key for name, row in rows.items()}
    assert stored == {"page": login_user(7), "key": "alice", "would-name-a-token-user": "login:key:token:bob",
                      "token": token_user("carol"), "page-in-token-project": login_user(8)}
