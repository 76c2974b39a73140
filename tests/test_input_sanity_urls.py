"""NUL in a path, a query value, a cursor or a header answers 400, never 500, and writes nothing."""
from __future__ import annotations

import base64
import json

import pytest
import requests

from tests.conftest import Api
from tests.support.bad_input import row_counts
from tests.support.problems import assert_problem
from tests.support.run_requests import run

pytestmark = pytest.mark.django_db(transaction=True)

# (method, path); {thread}, {message} and {run} are a real thread's, so only the planted part is wrong.
QUERY_ROUTES = [
    ("GET", "/v1/threads"),
    ("GET", "/v1/threads/{thread}"),
    ("PATCH", "/v1/threads/{thread}"),
    ("DELETE", "/v1/threads/{thread}"),
    ("GET", "/v1/threads/{thread}/messages"),
    ("GET", "/v1/threads/{thread}/messages/{message}"),
    ("DELETE", "/v1/threads/{thread}/runs/{run}"),
]
NUL_PATHS = [
    ("GET", "/v1/threads/thr_%00"),
    ("PATCH", "/v1/threads/thr_%00"),
    ("DELETE", "/v1/threads/thr_%00"),
    ("GET", "/v1/threads/thr_%00/messages"),
    ("GET", "/v1/threads/{thread}/messages/msg_%00"),
    ("POST", "/v1/threads/thr_%00/runs"),
    ("DELETE", "/v1/threads/{thread}/runs/run_%00"),
    ("POST", "/v1/threads/{thread}/components/comp_%00/state"),
]


@pytest.fixture
def thread(api: Api) -> dict[str, str]:
    thread_id, _ = run(api, "hello")
    detail = api.get(f"/v1/threads/{thread_id}").json()
    return {"thread": thread_id, "message": detail["messages"][0]["id"], "run": detail["lastCompletedRunId"]}


def _raw(api: Api, method: str, path: str, query: str = "", headers: dict | None = None) -> requests.Response:
    # The URL is written out by hand: `requests` would re-encode a NUL given as a parameter value.
    url = f"{api.base_url}{path}{'?' + query if query else ''}"
    body = {"userKey": "alice", "name": "x"} if method in ("POST", "PATCH") else None
    return api.session.request(method, url, json=body, headers=headers, timeout=30)


def _assert_untouched(api: Api, thread: dict[str, str], before) -> None:
    assert (row_counts(), api.get(f"/v1/threads/{thread['thread']}").json()) == before
    run(api, "still there?", thread_id=thread["thread"], previousRunId=thread["run"])


@pytest.mark.parametrize(("method", "path"), QUERY_ROUTES)
def test_nul_in_the_user_key_is_a_400_naming_the_query_parameter(api, thread, method, path):
    before = row_counts(), api.get(f"/v1/threads/{thread['thread']}").json()

    response = _raw(api, method, path.format(**thread), "userKey=al%00ice")

    assert_problem(response, 400, "VALIDATION_ERROR", field="query.userKey")
    _assert_untouched(api, thread, before)


@pytest.mark.parametrize("path", ["/v1/threads", "/v1/threads/{thread}/messages"])
def test_nul_in_a_cursor_is_a_400(api, thread, path):
    before = row_counts(), api.get(f"/v1/threads/{thread['thread']}").json()

    response = _raw(api, "GET", path.format(**thread), "userKey=alice&cursor=abc%00def")

    assert_problem(response, 400, "VALIDATION_ERROR", field="query.cursor")
    _assert_untouched(api, thread, before)


@pytest.mark.parametrize("decoded", [
    ["2026-01-01T00:00:00+00:00", "msg_\u0000"],
    ["2026-01-01T00:00:00+00:00", "msg_\ud800"],
    "[" * 5000,
    ["0001-01-01T00:00:00+14:00", "msg_x"],
], ids=["nul-id", "lone-surrogate-id", "deep", "time-out-of-range"])
@pytest.mark.parametrize("path", ["/v1/threads", "/v1/threads/{thread}/messages"])
def test_a_forged_cursor_is_invalid_cursor(api, thread, path, decoded):
    text = decoded if isinstance(decoded, str) else json.dumps(decoded)
    cursor = base64.urlsafe_b64encode(text.encode("utf-8", "surrogatepass")).decode().rstrip("=")

    response = api.get(path.format(**thread), cursor=cursor)

    assert_problem(response, 400, "INVALID_CURSOR")


@pytest.mark.parametrize(("method", "path"), NUL_PATHS)
def test_nul_in_a_path_id_is_a_400_naming_the_path(api, thread, method, path):
    before = row_counts(), api.get(f"/v1/threads/{thread['thread']}").json()

    response = _raw(api, method, path.format(**thread), "userKey=alice")

    problem = assert_problem(response, 400, "VALIDATION_ERROR", field="path")
    assert "\x00" not in problem["instance"]
    _assert_untouched(api, thread, before)


@pytest.mark.parametrize(("method", "path"), [("GET", "/v1/threads"), ("POST", "/v1/threads"),
                                              ("POST", "/v1/threads/runs")])
def test_nul_in_a_header_is_refused(api, thread, method, path):
    before = row_counts(), api.get(f"/v1/threads/{thread['thread']}").json()

    response = _raw(api, method, path, "userKey=alice", headers={"X-Client-Note": "a\x00b"})

    # The HTTP server itself may refuse the request line before the application sees it.
    assert 400 <= response.status_code < 500, response.text
    if response.headers.get("Content-Type", "").startswith("application/problem+json"):
        assert_problem(response, 400, "VALIDATION_ERROR", field="header.x-client-note")
    _assert_untouched(api, thread, before)


def test_nul_in_a_query_outside_the_api_is_a_plain_400(live_server_url, transactional_db):
    response = requests.get(f"{live_server_url}/login/?next=/%00", timeout=30)

    assert response.status_code == 400
    assert "Traceback" not in response.text
