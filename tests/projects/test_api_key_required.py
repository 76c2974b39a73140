"""Every /v1 endpoint refuses callers without a valid, unrevoked project key (docs/protocol.md#identity-and-auth)."""
import pytest
import requests

from projects.models import ApiKey
from tests.support.problems import assert_problem
from threads import services

pytestmark = pytest.mark.django_db(transaction=True)

ENDPOINTS = [
    ("GET", "/v1/threads?userKey=alice"),
    ("POST", "/v1/threads"),
    ("GET", "/v1/threads/{thread}?userKey=alice"),
    ("PATCH", "/v1/threads/{thread}?userKey=alice"),
    ("DELETE", "/v1/threads/{thread}?userKey=alice"),
    ("GET", "/v1/threads/{thread}/messages?userKey=alice"),
    ("GET", "/v1/threads/{thread}/messages/{message}?userKey=alice"),
    ("POST", "/v1/threads/runs"),
    ("POST", "/v1/threads/{thread}/runs"),
    ("DELETE", "/v1/threads/{thread}/runs/run_x?userKey=alice"),
    ("POST", "/v1/threads/{thread}/components/comp_x/state"),
]
RUN_BODY = {"userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}


@pytest.fixture
def thread(project):
    thread = services.thread_create(project=project, user_key="alice")
    message = services.message_create(thread=thread, role="user", content=[{"type": "text", "text": "hi"}])
    return thread, message


def _call(base_url: str, method: str, template: str, thread, headers: dict) -> requests.Response:
    path = template.format(thread=thread[0].id, message=thread[1].id)
    body = RUN_BODY if method in ("POST", "PATCH") else None
    return requests.request(method, base_url + path, json=body, headers=headers, timeout=30)


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
def test_it_refuses_a_request_without_a_key(live_server_url, thread, method, path):
    assert_problem(_call(live_server_url, method, path, thread, {}), 401, "UNAUTHORIZED")


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
def test_it_refuses_an_unknown_key(live_server_url, thread, method, path):
    response = _call(live_server_url, method, path, thread, {"x-api-key": "tk_not-a-real-key"})

    assert_problem(response, 401, "UNAUTHORIZED")


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
def test_it_refuses_a_revoked_key(live_server_url, thread, api_key, method, path):
    ApiKey.objects.update(revoked=True)

    assert_problem(_call(live_server_url, method, path, thread, {"x-api-key": api_key}), 401, "UNAUTHORIZED")


def test_a_refused_request_changes_nothing(live_server_url, thread):
    _call(live_server_url, "DELETE", "/v1/threads/{thread}?userKey=alice", thread, {"x-api-key": "tk_wrong"})

    assert thread[0].__class__.objects.filter(id=thread[0].id).exists()


def test_a_valid_key_is_accepted_and_its_use_recorded(api, api_key):
    assert api.get("/v1/threads").status_code == 200

    assert ApiKey.objects.get().last_used_at is not None


@pytest.mark.parametrize("path", ["/v1/threads/runs", "/v1/threads/{thread}/runs", "/v1/threads?userKey=alice"])
def test_a_key_revoked_after_use_is_refused_at_its_next_request(live_server_url, thread, api_key, path):
    # The same server process has just accepted the key (the run path reads it with the project's
    # tools, projects/statements.py): nothing it remembers may outlive the revoke.
    runs = f"/v1/threads/{thread[0].id}/runs"
    first = requests.post(live_server_url + runs, json=RUN_BODY, headers={"x-api-key": api_key}, timeout=30)
    assert first.status_code == 200 and b"RUN_FINISHED" in first.content
    ApiKey.objects.update(revoked=True)

    method = "GET" if path.startswith("/v1/threads?") else "POST"
    assert_problem(_call(live_server_url, method, path, thread, {"x-api-key": api_key}), 401, "UNAUTHORIZED")
