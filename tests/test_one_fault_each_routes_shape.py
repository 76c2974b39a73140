"""The same fault gets each route family's own error shape, from the one table of route prefixes to
shapes (core/error_shapes.py): problem+json on the v1 API, OpenAI's error object on the gateway,
OAuth's on the token exchange. An oversized body (refused at the ASGI edge) and a NUL in the body
(the input check) go over real HTTP to the live server; an unhandled exception in the view (the
exception middleware) goes through Django's test client in this process, where a function can be
made to raise."""
from __future__ import annotations

import pytest
import requests
from django.conf import settings

pytestmark = pytest.mark.django_db(transaction=True)


class Boom(RuntimeError):
    pass


# (family, path, content type, a body with a NUL in it, the function that fails with Boom)
ROUTES = {
    "v1": ("/v1/threads", "application/json", b'{"userKey": "al\\u0000ice"}', "threads.services.thread_create"),
    "gateway": ("/api/chat/completions", "application/json",
                b'{"model": "offline", "messages": [{"role": "user", "content": "a\\u0000b"}]}',
                "gateway.views.parse_chat_request"),
    "oauth": ("/oauth/token", "application/x-www-form-urlencoded", b"grant_type=a%00b",
              "projects.oauth.token_exchange"),
}


def oversized(live_server_url, api_key, client, monkeypatch, family):
    path, content_type, _, _ = ROUTES[family]
    return requests.post(live_server_url + path, data=b" " * (settings.MAX_REQUEST_BYTES + 1), timeout=30,
                         headers={"x-api-key": api_key, "content-type": content_type})


def nul_in_body(live_server_url, api_key, client, monkeypatch, family):
    path, content_type, body, _ = ROUTES[family]
    return requests.post(live_server_url + path, data=body, timeout=30,
                         headers={"x-api-key": api_key, "content-type": content_type})


def unhandled(live_server_url, api_key, client, monkeypatch, family):
    path, content_type, _, target = ROUTES[family]

    def explode(*args, **kwargs):
        raise Boom("secret internal detail")

    monkeypatch.setattr(target, explode)
    body = {"v1": '{"userKey": "alice"}', "gateway": '{"model": "offline", "messages": []}',
            "oauth": "grant_type=x"}[family]
    return client.post(path, body, content_type=content_type, HTTP_X_API_KEY=api_key)


def problem_json(response, status, code):
    assert response.headers["content-type"].startswith("application/problem+json"), response.content
    assert response.json()["status"] == status and response.json()["code"] == code


def openai_shape(response, status, code):
    assert response.headers["content-type"] == "application/json", response.content
    error = response.json()["error"]
    assert error["code"] == {"PAYLOAD_TOO_LARGE": "payload_too_large", "VALIDATION_ERROR": "invalid_value",
                             "INTERNAL_ERROR": "internal_error"}[code]
    assert error["type"] == ("server_error" if status >= 500 else "invalid_request_error")
    assert error["message"]


def oauth_shape(response, status, code):
    if status >= 500:  # RFC 6749 has no error for a server fault: it stays a problem (projects/oauth.py)
        return problem_json(response, status, code)
    assert response.headers["content-type"] == "application/json", response.content
    assert response.json()["error"] == "invalid_request" and response.json()["error_description"]
    assert response.headers["cache-control"] == "no-store"


SHAPES = {"v1": problem_json, "gateway": openai_shape, "oauth": oauth_shape}
FAULTS = [(oversized, 413, "PAYLOAD_TOO_LARGE"), (nul_in_body, 400, "VALIDATION_ERROR"),
          (unhandled, 500, "INTERNAL_ERROR")]


@pytest.mark.parametrize("family", list(ROUTES))
@pytest.mark.parametrize(("fault", "status", "code"), FAULTS, ids=[fault.__name__ for fault, _, _ in FAULTS])
def test_the_same_fault_gets_each_route_familys_own_shape(live_server_url, api_key, client, monkeypatch,
                                                          fault, status, code, family):
    response = fault(live_server_url, api_key, client, monkeypatch, family)

    assert response.status_code == status, response.content
    SHAPES[family](response, status, code)
    assert b"secret internal detail" not in response.content and b"Traceback" not in response.content
