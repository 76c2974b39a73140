"""Errors answered in the route's shape, also those Django or a parser would answer on its own: a huge
event id, a bad Host, a method the route does not take (once a CSRF page), and the 409 of a busy
thread with its Retry-After. Over real HTTP on the live server."""
from __future__ import annotations

import http.client
from urllib.parse import urlsplit

import pytest

from tests.support.problems import assert_problem
from tests.support.sse import iter_events

pytestmark = pytest.mark.django_db(transaction=True)

HUGE_ID = "9" * 4301  # past int()'s 4,300-digit limit: it raised ValueError (a 500)


def raw_request(base_url: str, method: str, path: str, headers: dict[str, str]) -> tuple[int, dict, bytes]:
    """A request with exactly these headers (requests would set Host itself)."""
    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        connection.putrequest(method, path, skip_host=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def test_a_huge_after_or_last_event_id_is_a_400_naming_it(api):
    path = "/v1/threads/thr_x/runs/run_x/events"
    assert_problem(api.get(path, after=HUGE_ID, userKey="alice"), 400, "VALIDATION_ERROR", field="after")
    response = api.session.get(api.base_url + path, params={"userKey": "alice"}, timeout=30,
                               headers={"Last-Event-ID": HUGE_ID})
    assert_problem(response, 400, "VALIDATION_ERROR", field="Last-Event-ID")


@pytest.mark.parametrize("host", ["bad host", "exa mple.com:80", "[::1"])
def test_a_bad_host_is_a_problem_on_the_api_and_openais_shape_on_the_gateway(live_server_url, host):
    status, headers, body = raw_request(live_server_url, "GET", "/v1/threads", {"Host": host})
    assert status == 400 and headers["content-type"].startswith("application/problem+json"), body
    assert b'"BAD_REQUEST"' in body
    status, headers, body = raw_request(live_server_url, "GET", "/api/models", {"Host": host})
    assert status == 400 and headers["content-type"] == "application/json", body
    assert b'"invalid_request_error"' in body


def test_a_method_the_events_route_does_not_take_is_405_not_a_csrf_page(api):
    response = api.session.put(api.base_url + "/v1/threads/thr_x/runs/run_x/events", timeout=30)
    assert_problem(response, 405, "METHOD_NOT_ALLOWED")


def test_a_post_to_the_models_list_is_405_in_openais_shape(api):
    response = api.session.post(api.base_url + "/api/models", json={}, timeout=30)
    assert response.status_code == 405 and response.json()["error"]["type"] == "invalid_request_error"


def test_a_csrf_failure_on_the_api_is_a_problem_and_off_it_djangos_page():
    # Every API route that checks CSRF itself (DRF's, for a session) answers its own 403; this is the
    # view Django's CsrfViewMiddleware calls for any other route.
    from django.test import RequestFactory

    from tambo_project.views import csrf_failure

    answer = csrf_failure(RequestFactory().post("/v1/threads"), reason="CSRF cookie not set.")
    assert answer.status_code == 403 and answer["Content-Type"].startswith("application/problem+json")
    off_api = csrf_failure(RequestFactory().post("/login/"), reason="CSRF cookie not set.")
    assert off_api.status_code == 403 and off_api["Content-Type"].startswith("text/html")


def test_a_run_refused_for_a_busy_thread_says_when_to_retry(api):
    from tests.runs.conftest import Runs

    runs = Runs(api)
    thread_id = api.post("/v1/threads", {"userKey": "alice"}).json()["id"]
    first = runs.post(thread_id, "!slow please")
    events = iter_events(first)
    assert next(events)["type"] == "RUN_STARTED"
    try:
        refused = runs.post(thread_id, "me too")
        body = assert_problem(refused, 409, "CONCURRENT_RUN")
        assert int(refused.headers["Retry-After"]) >= 1 and body["retryAfter"] == int(refused.headers["Retry-After"])
    finally:
        first.close()
    runs.wait_idle(thread_id)
