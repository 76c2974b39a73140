"""User tokens verified from the issuer alone: OpenID Connect discovery against a local issuer."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.user_tokens import JwksServer, _configure, exchange, rsa_key, sign_rs256

pytestmark = pytest.mark.django_db(transaction=True)


class Issuer:
    """Serves /.well-known/openid-configuration as set in `answer` (body, content type, delay)."""

    def __init__(self):
        self.document: dict | None = None
        self.raw: tuple[bytes, str] | None = None
        self.delay = 0.0
        self.fetches = 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                issuer.fetches += 1
                if issuer.delay:
                    time.sleep(issuer.delay)
                body, kind = issuer.raw or (json.dumps(issuer.document).encode(), "application/json")
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "Issuer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def jwks():
    with JwksServer() as server:
        server.keys["k1"] = rsa_key()
        yield server


@pytest.fixture
def issuer():
    with Issuer() as served:
        yield served


def test_a_token_is_verified_with_the_keys_the_issuer_names(live_server_url, api_key, project, jwks, issuer):
    issuer.document = {"issuer": issuer.url, "jwks_uri": jwks.url}
    _configure(project, user_token_issuer=issuer.url)

    first = exchange(live_server_url, api_key, sign_rs256(jwks.keys["k1"], kid="k1", iss=issuer.url))
    second = exchange(live_server_url, api_key, sign_rs256(jwks.keys["k1"], kid="k1", iss=issuer.url, user="bob"))

    assert first.status_code == 200, first.text
    assert second.status_code == 200, second.text
    assert issuer.fetches == 1  # the discovery document is cached


@pytest.mark.parametrize(("setup", "said"), [
    (lambda i, j: setattr(i, "document", {"issuer": i.url}), "no jwks_uri"),
    (lambda i, j: setattr(i, "raw", (b"<html><body>Sign in</body></html>", "text/html")), "not JSON"),
    (lambda i, j: setattr(i, "document", {"issuer": "https://elsewhere.example", "jwks_uri": j.url}),
     "another issuer"),
    (lambda i, j: setattr(i, "document", {"issuer": i.url, "jwks_uri": "http://keys.example.com/jwks"}), "https"),
    (lambda i, j: (setattr(i, "document", {"issuer": i.url, "jwks_uri": j.url}), setattr(i, "delay", 5)),
     "in time"),
])
def test_a_discovery_that_gives_no_usable_jwks_is_a_clear_refusal(live_server_url, api_key, project, jwks, issuer,
                                                                  setup, said):
    setup(issuer, jwks)
    _configure(project, user_token_issuer=issuer.url)

    response = exchange(live_server_url, api_key, sign_rs256(jwks.keys["k1"], kid="k1", iss=issuer.url))

    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_grant"
    assert said in response.json()["error_description"]


def test_an_issuer_that_is_not_https_is_not_followed(live_server_url, api_key, project, jwks):
    _configure(project, user_token_issuer="http://auth.example.com")

    response = exchange(live_server_url, api_key, sign_rs256(jwks.keys["k1"], kid="k1", iss="http://auth.example.com"))

    assert response.status_code == 400
    assert "https" in response.json()["error_description"]
