"""Every /v1 error is application/problem+json, including the ones Django and DRF produce (docs/protocol.md#errors)."""
import pytest
import requests
from django.conf import settings
from django.test import Client

from tests.support.problems import assert_problem

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_malformed_json_body_is_a_validation_problem(api):
    response = api.session.post(api.base_url + "/v1/threads", data=b'{"userKey": "alice",',
                                headers={"Content-Type": "application/json"}, timeout=30)

    problem = assert_problem(response, 400, "VALIDATION_ERROR")
    assert problem["instance"] == "/v1/threads"


def test_a_malformed_json_body_on_a_run_is_a_validation_problem(api):
    response = api.session.post(api.base_url + "/v1/threads/runs", data=b"{not json",
                                headers={"Content-Type": "application/json"}, timeout=30)

    assert_problem(response, 400, "VALIDATION_ERROR", field="body")


def test_a_body_that_is_not_json_is_an_unsupported_media_type_problem(api):
    response = api.session.post(api.base_url + "/v1/threads", data=b"userKey=alice",
                                headers={"Content-Type": "application/x-www-form-urlencoded"}, timeout=30)

    assert_problem(response, 415, "UNSUPPORTED_MEDIA_TYPE")


def test_a_wrong_method_on_a_rest_endpoint_is_a_problem(api):
    response = api.session.put(api.base_url + "/v1/threads", json={}, timeout=30)

    assert_problem(response, 405, "METHOD_NOT_ALLOWED", instance="/v1/threads")


def test_a_wrong_method_on_a_run_endpoint_is_a_problem(api):
    assert_problem(api.get("/v1/threads/runs"), 405, "METHOD_NOT_ALLOWED", instance="/v1/threads/runs")


@pytest.mark.parametrize("path", ["/v1/nothing-here", "/v1/threads/thr_1/messages/msg_1/extra", "/v1"])
def test_an_unknown_v1_route_is_a_not_found_problem(api, path):
    assert_problem(api.get(path), 404, "NOT_FOUND", instance=path)


def test_an_unknown_route_without_a_key_is_still_a_problem(live_server_url):
    assert_problem(requests.get(live_server_url + "/v1/nothing-here", timeout=30), 404, "NOT_FOUND")


# Run routes take the larger MAX_RUN_BYTES: their bodies carry the user's images (docs/images-and-voice.md).
@pytest.mark.parametrize(("path", "limit"), [("/v1/threads", "MAX_REQUEST_BYTES"), ("/v1/threads/runs", "MAX_RUN_BYTES")])
def test_a_body_over_the_limit_is_refused_with_413(api, path, limit):
    big = b'{"userKey": "alice", "metadata": {"blob": "' + b"x" * getattr(settings, limit) + b'"}}'

    response = api.session.post(api.base_url + path, data=big, headers={"Content-Type": "application/json"},
                                timeout=60)

    assert_problem(response, 413, "PAYLOAD_TOO_LARGE", instance=path)


def test_a_body_just_under_the_limit_is_read(api):
    prefix, suffix = b'{"userKey": "alice", "metadata": {"blob": "', b'"}}'
    body = prefix + b"x" * (settings.MAX_REQUEST_BYTES - len(prefix) - len(suffix)) + suffix

    response = api.session.post(api.base_url + "/v1/threads", data=body,
                                headers={"Content-Type": "application/json"}, timeout=60)

    assert response.status_code == 201, response.text[:500]


# Unexpected exceptions: the server process cannot be made to fail on purpose, so these go through
# Django's test client in this process with a service that raises.

class Boom(RuntimeError):
    pass


def test_an_unexpected_error_in_a_rest_view_is_an_internal_error_without_details(client, api_key, monkeypatch):
    def explode(**kwargs):
        raise Boom("secret internal detail")

    monkeypatch.setattr("threads.selectors.thread_list", explode)

    response = client.get("/v1/threads", {"userKey": "alice"}, HTTP_X_API_KEY=api_key)

    problem = assert_problem(response, 500, "INTERNAL_ERROR", instance="/v1/threads")
    assert "secret internal detail" not in response.content.decode()
    assert "Boom" not in response.content.decode()
    assert problem["detail"] == "An internal error occurred."


def test_an_unexpected_error_in_a_run_view_is_an_internal_error_without_details(client, api_key, monkeypatch):
    def explode(**kwargs):
        raise Boom("secret internal detail")

    monkeypatch.setattr("runs.services.run_start", explode)

    response = client.post("/v1/threads/runs", {"userKey": "alice", "message": {
        "role": "user", "content": [{"type": "text", "text": "hi"}]}}, content_type="application/json",
        HTTP_X_API_KEY=api_key)

    assert_problem(response, 500, "INTERNAL_ERROR", instance="/v1/threads/runs")
    assert "secret internal detail" not in response.content.decode()
    assert "Traceback" not in response.content.decode()


def test_a_405_under_v1_names_the_allowed_methods(api_key):
    response = Client().get("/v1/threads/thr_x/runs", headers={"x-api-key": api_key})

    assert response.status_code == 405
    assert response["Content-Type"].startswith("application/problem+json")
    assert response.json()["code"] == "METHOD_NOT_ALLOWED"
    assert response["Allow"] == "POST"
