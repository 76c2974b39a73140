"""`Authorization: Bearer <access token>` on /v1 (docs/protocol.md#identity-and-auth and #identity-by-token), over HTTP.

The token names the end user, so requests need no `userKey`; one that differs is refused. The token is
checked on every request: forged, expired, another project's or issued through a revoked key → 401.
"""
import time

import jwt
import pytest
import requests

from projects.identities import token_user
from projects.models import ApiKey, Project
from tests.support.problems import assert_problem
from tests.support.run_requests import user_message
from tests.support.sse import iter_events, read_events
from tests.support.user_tokens import OTHER_HS256_SECRET, access_token, configure_hs256, sign_hs256
from threads import services
from threads.models import Thread

pytestmark = pytest.mark.django_db(transaction=True)


class Bearer:
    """Calls /v1 as an app in userToken mode does: the API key and the bearer, no userKey."""

    def __init__(self, base_url: str, token: str, api_key: str | None):
        self.base_url = base_url
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"
        if api_key:
            self.session.headers["x-api-key"] = api_key

    def request(self, method: str, path: str, **kwargs) -> requests.Response:
        return self.session.request(method, self.base_url + path, timeout=30, **kwargs)


@pytest.fixture
def token(live_server_url, api_key, project) -> str:
    configure_hs256(project)
    return access_token(live_server_url, api_key, sign_hs256(user="alice"))


@pytest.fixture
def bearer(live_server_url, token, api_key) -> Bearer:
    return Bearer(live_server_url, token, api_key)


def _others(project) -> dict[str, Thread]:
    return {"bob": services.thread_create(project=project, user_key=token_user("bob")),
            "alice": services.thread_create(project=project, user_key=token_user("alice"))}


def test_it_lists_creates_and_fetches_the_threads_of_the_tokens_user_only(bearer, project):
    threads = _others(project)

    created = bearer.request("POST", "/v1/threads", json={"metadata": {"via": "token"}})
    listed = bearer.request("GET", "/v1/threads")

    assert created.status_code == 201, created.text
    assert created.json()["userKey"] == "alice"
    assert [t["id"] for t in listed.json()["threads"]] == [created.json()["id"], threads["alice"].id]
    assert bearer.request("GET", f"/v1/threads/{threads['alice'].id}").status_code == 200
    assert_problem(bearer.request("GET", f"/v1/threads/{threads['bob'].id}"), 404, "THREAD_NOT_FOUND")


def test_the_bearer_alone_is_enough(live_server_url, token, project):
    alone = Bearer(live_server_url, token, api_key=None)

    response = alone.request("POST", "/v1/threads", json={})

    assert response.status_code == 201, response.text
    assert response.json()["userKey"] == "alice"


def test_a_user_key_that_differs_from_the_tokens_user_is_refused(bearer, project):
    thread = services.thread_create(project=project, user_key=token_user("alice"))

    assert_problem(bearer.request("GET", "/v1/threads", params={"userKey": "bob"}), 400, "VALIDATION_ERROR",
                   field="userKey")
    assert_problem(bearer.request("POST", "/v1/threads", json={"userKey": "bob"}), 400, "VALIDATION_ERROR")
    assert_problem(bearer.request("PATCH", f"/v1/threads/{thread.id}", params={"userKey": "bob"},
                                  json={"name": "x"}), 400, "VALIDATION_ERROR")
    assert Thread.objects.count() == 1
    assert Thread.objects.get().name is None


def test_the_same_user_key_as_the_tokens_user_is_accepted(bearer):
    assert bearer.request("GET", "/v1/threads", params={"userKey": "alice"}).status_code == 200


def test_a_run_started_with_a_bearer_belongs_to_the_tokens_user_and_can_be_cancelled(bearer):
    response = bearer.request("POST", "/v1/threads/runs", json={"message": user_message("!slow please")},
                              stream=True)
    assert response.status_code == 200, response.text
    thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
    stream = iter_events(response)
    for event in stream:
        if event["type"] == "TEXT_MESSAGE_CONTENT":
            break

    cancel = bearer.request("DELETE", f"/v1/threads/{thread_id}/runs/{run_id}")
    rest = list(stream)

    assert cancel.status_code == 200, cancel.text
    assert cancel.json() == {"runId": run_id, "status": "cancelled"}
    assert rest[-1]["type"] == "RUN_ERROR" and rest[-1]["code"] == "CANCELLED"
    assert Thread.objects.get(id=thread_id).user_key == token_user("alice")


def test_a_run_on_an_existing_thread_works_with_a_bearer(bearer, project):
    thread = services.thread_create(project=project, user_key=token_user("alice"))

    response = bearer.request("POST", f"/v1/threads/{thread.id}/runs", json={"message": user_message("hi")},
                              stream=True)

    assert response.status_code == 200, response.text
    assert read_events(response)[-1]["type"] == "RUN_FINISHED"


def _forged(token: str) -> str:
    claims = jwt.decode(token, options={"verify_signature": False})
    return jwt.encode({**claims, "sub": "bob"}, "a-key-that-is-not-the-servers-0123456789", algorithm="HS256")


def _expired(token: str) -> str:
    # Signed with the project's own secret, only the expiry is in the past.
    claims = jwt.decode(token, options={"verify_signature": False})
    now = int(time.time())
    return jwt.encode({**claims, "iat": now - 7200, "exp": now - 3600},
                      Project.objects.get(pk=claims["iss"]).access_token_secret, algorithm="HS256")


@pytest.mark.parametrize("spoil", [_forged, _expired, lambda t: t[:-4] + "AAAA", lambda t: "x.y.z",
                                   lambda t: jwt.encode({"sub": "alice"}, None, algorithm="none")])
def test_a_forged_expired_or_malformed_access_token_is_refused(live_server_url, token, api_key, spoil):
    for key in (api_key, None):
        spoiled = Bearer(live_server_url, spoil(token), key)
        assert_problem(spoiled.request("GET", "/v1/threads"), 401, "UNAUTHORIZED")
        assert_problem(spoiled.request("POST", "/v1/threads", json={}), 401, "UNAUTHORIZED")
    assert Thread.objects.count() == 0


def test_a_subject_token_is_not_an_access_token(live_server_url, api_key, token):
    # The app's own user token must be exchanged first; sent as a bearer it proves nothing here.
    app_token = Bearer(live_server_url, sign_hs256(user="alice"), api_key)

    assert_problem(app_token.request("GET", "/v1/threads"), 401, "UNAUTHORIZED")


def test_an_access_token_of_another_project_is_refused_with_this_projects_key(live_server_url, api_key, token):
    other = Project.objects.create(name="other-app")
    configure_hs256(other, OTHER_HS256_SECRET)
    _, other_key = ApiKey.generate(other, "other")
    theirs = access_token(live_server_url, other_key, sign_hs256(secret=OTHER_HS256_SECRET, user="alice"))

    mixed = Bearer(live_server_url, theirs, api_key)

    assert_problem(mixed.request("GET", "/v1/threads"), 401, "UNAUTHORIZED")
    assert_problem(Bearer(live_server_url, token, other_key).request("GET", "/v1/threads"), 401, "UNAUTHORIZED")


def test_revoking_the_api_key_ends_its_access_tokens_at_once(live_server_url, token, api_key, project):
    with_key, alone = Bearer(live_server_url, token, api_key), Bearer(live_server_url, token, None)
    assert with_key.request("GET", "/v1/threads").status_code == 200
    assert alone.request("GET", "/v1/threads").status_code == 200

    ApiKey.objects.update(revoked=True)

    assert_problem(with_key.request("GET", "/v1/threads"), 401, "UNAUTHORIZED")
    assert_problem(alone.request("GET", "/v1/threads"), 401, "UNAUTHORIZED")
    assert_problem(alone.request("POST", "/v1/threads/runs", json={"message": user_message("hi")}),
                   401, "UNAUTHORIZED")


def test_revoking_the_key_the_token_came_through_counts_even_when_another_key_is_sent(
        live_server_url, token, api_key, project):
    _, second_key = ApiKey.generate(project, "second")
    ApiKey.objects.filter(name="tests").update(revoked=True)

    assert_problem(Bearer(live_server_url, token, second_key).request("GET", "/v1/threads"), 401, "UNAUTHORIZED")


def test_without_a_token_or_a_user_key_the_api_key_alone_still_reads_nothing(live_server_url, api_key, project):
    services.thread_create(project=project, user_key=token_user("alice"))

    response = requests.get(live_server_url + "/v1/threads", headers={"x-api-key": api_key}, timeout=30)

    assert_problem(response, 400, "VALIDATION_ERROR", field="userKey")


ROUTES = [
    ("GET", "/v1/threads", 200),
    ("POST", "/v1/threads", 201),
    ("GET", "/v1/threads/{thread}", 200),
    ("PATCH", "/v1/threads/{thread}", 200),
    ("GET", "/v1/threads/{thread}/messages", 200),
    ("GET", "/v1/threads/{thread}/messages/{message}", 200),
    ("POST", "/v1/threads/runs", 200),
    ("POST", "/v1/threads/{thread}/runs", 200),
    ("DELETE", "/v1/threads/{thread}/runs/run_x", 404),  # no such active run: checked after auth
    ("POST", "/v1/threads/{thread}/components/comp_x/state", 404),  # no such component, likewise
    ("DELETE", "/v1/threads/{thread}", 204),
]


def _route_call(client: Bearer, method: str, template: str, project) -> requests.Response:
    thread = services.thread_create(project=project, user_key=token_user("alice"))
    message = services.message_create(thread=thread, role="user", content=[{"type": "text", "text": "hi"}])
    body = {"message": user_message("hi")} if template.endswith("runs") else {"state": {}}
    response = client.request(method, template.format(thread=thread.id, message=message.id),
                              json=body if method in ("POST", "PATCH") else None)
    if response.headers.get("Content-Type", "").startswith("text/event-stream"):
        read_events(response)
    return response


@pytest.mark.parametrize(("method", "path", "status"), ROUTES)
def test_every_v1_route_takes_the_user_from_the_bearer(bearer, project, method, path, status):
    response = _route_call(bearer, method, path, project)

    assert response.status_code == status, response.text


@pytest.mark.parametrize(("method", "path", "status"), ROUTES)
def test_every_v1_route_refuses_a_forged_bearer(live_server_url, token, api_key, project, method, path, status):
    response = _route_call(Bearer(live_server_url, _forged(token), api_key), method, path, project)

    assert_problem(response, 401, "UNAUTHORIZED")


def test_the_gateway_takes_an_access_token_and_still_a_project_key_as_bearer(live_server_url, token, api_key):
    body = {"model": "offline", "messages": [{"role": "user", "content": "hi"}]}
    for bearer_value in (token, api_key):
        response = requests.post(live_server_url + "/api/chat/completions", json=body, timeout=30,
                                 headers={"Authorization": f"Bearer {bearer_value}"})
        assert response.status_code == 200, response.text
        assert response.json()["choices"][0]["message"]["role"] == "assistant"

    ApiKey.objects.update(revoked=True)
    refused = requests.post(live_server_url + "/api/chat/completions", json=body, timeout=30,
                            headers={"Authorization": f"Bearer {token}"})
    assert refused.status_code == 401
