"""Helpers for identity-by-token tests: user tokens an app would sign, a JWKS server, the exchange.

The tests make their own keys with `cryptography` and serve their own JWKS from a thread on
127.0.0.1, as an identity provider would.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

HS256_SECRET = "an-hs256-secret-shared-with-the-app-0123456789"
OTHER_HS256_SECRET = "another-projects-secret-shared-with-its-app-9876"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"


def user_claims(user: str = "alice", expires_in: int = 600, **extra) -> dict:
    now = int(time.time())
    return {"sub": user, "iat": now, "exp": now + expires_in, **extra}


def sign_hs256(secret: str = HS256_SECRET, **claims) -> str:
    return jwt.encode(user_claims(**claims), secret, algorithm="HS256")


def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_pem(private_key) -> str:
    return private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def sign_rs256(private_key, kid: str | None = None, **claims) -> str:
    return jwt.encode(user_claims(**claims), private_key, algorithm="RS256", headers={"kid": kid} if kid else None)


def configure_hs256(project, secret: str = HS256_SECRET, **fields) -> None:
    _configure(project, user_token_hs256_secret=secret, **fields)


def _configure(project, **fields) -> None:
    values = {"user_token_hs256_secret": "", "user_token_public_key": "", "user_token_jwks_url": "",
              "user_token_issuer": "", "user_token_audience": "", "user_token_claim": "sub", **fields}
    type(project).objects.filter(pk=project.pk).update(**values)
    project.refresh_from_db()


def configure_public_key(project, pem: str, **fields) -> None:
    _configure(project, user_token_public_key=pem, **fields)


def configure_jwks(project, url: str, **fields) -> None:
    _configure(project, user_token_jwks_url=url, **fields)


def exchange(base_url: str, api_key: str | None, subject_token: str | None, **form) -> requests.Response:
    body = {"grant_type": TOKEN_EXCHANGE, "subject_token_type": ACCESS_TOKEN_TYPE, **form}
    if subject_token is not None:
        body["subject_token"] = subject_token
    headers = {"x-api-key": api_key} if api_key else {}
    return requests.post(base_url + "/oauth/token", data=body, headers=headers, timeout=30)


def access_token(base_url: str, api_key: str, subject_token: str) -> str:
    response = exchange(base_url, api_key, subject_token)
    assert response.status_code == 200, response.text
    return response.json()["access_token"]


class JwksServer:
    """Serves `{"keys": [...]}` for the keys it holds at GET /jwks.json; counts the fetches."""

    def __init__(self):
        self.keys: dict[str, rsa.RSAPrivateKey] = {}
        self.extra_jwks: list[dict] = []  # served as they are (e.g. a symmetric key no JWKS should hold)
        self.fetches = 0
        self.raw_body: bytes | None = None  # served instead of the key set, when set
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                server.fetches += 1
                body = server.raw_body or json.dumps(
                    {"keys": [server.jwk(kid) for kid in server.keys] + server.extra_jwks}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/jwks.json"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def jwk(self, kid: str) -> dict:
        jwk = jwt.algorithms.RSAAlgorithm.to_jwk(self.keys[kid].public_key(), as_dict=True)
        return {**jwk, "kid": kid, "use": "sig", "alg": "RS256"}

    def __enter__(self) -> "JwksServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
