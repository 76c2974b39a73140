"""POST /oauth/token: RFC 8693 token exchange over HTTP, and every way it refuses (docs/protocol.md#identity-by-token).

Every refusal is a 4xx in OAuth's shape (RFC 6749 5.2), never a 5xx, and writes nothing: the API key's
`last_used_at`, noted only on success, stays empty.
"""
import base64
import hashlib
import hmac
import json
import time

import jwt
import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from projects.models import ApiKey, Project
from tests.support.user_tokens import (
    ACCESS_TOKEN_TYPE, HS256_SECRET, OTHER_HS256_SECRET, TOKEN_EXCHANGE, configure_hs256, configure_public_key,
    exchange, public_pem, rsa_key, sign_hs256, sign_rs256, user_claims,
)
from threads.models import Thread

pytestmark = pytest.mark.django_db(transaction=True)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def assert_oauth_error(response: requests.Response, status: int, error: str) -> str:
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"].startswith("application/json")
    assert response.headers["Cache-Control"] == "no-store"
    body = response.json()
    assert set(body) == {"error", "error_description"}, body
    assert body["error"] == error, body
    assert body["error_description"]
    assert "Traceback" not in response.text
    return body["error_description"]


def assert_nothing_written() -> None:
    assert ApiKey.objects.filter(last_used_at__isnull=False).count() == 0
    assert Thread.objects.count() == 0


@pytest.fixture
def hs256_project(project):
    configure_hs256(project)
    return project


def test_it_exchanges_a_user_token_for_an_access_token(live_server_url, api_key, hs256_project):
    before = int(time.time())
    response = exchange(live_server_url, api_key, sign_hs256(user="alice", expires_in=7200))

    assert response.status_code == 200, response.text
    assert response.headers["Cache-Control"] == "no-store"
    body = response.json()
    assert set(body) == {"access_token", "token_type", "expires_in", "issued_token_type"}
    assert body["token_type"] == "Bearer"
    assert body["issued_token_type"] == ACCESS_TOKEN_TYPE
    assert 3590 <= body["expires_in"] <= 3600  # at most one hour
    claims = jwt.decode(body["access_token"], options={"verify_signature": False})
    key = ApiKey.objects.get()
    assert claims["iss"] == hs256_project.id
    assert claims["sub"] == "alice"
    assert claims["akid"] == key.pk
    assert claims["jti"]
    assert before <= claims["iat"] <= claims["exp"] - 3590
    assert key.last_used_at is not None


def test_the_access_token_never_outlives_the_user_token(live_server_url, api_key, hs256_project):
    subject = sign_hs256(expires_in=120)
    subject_exp = jwt.decode(subject, options={"verify_signature": False})["exp"]

    body = exchange(live_server_url, api_key, subject).json()

    assert jwt.decode(body["access_token"], options={"verify_signature": False})["exp"] == subject_exp
    assert body["expires_in"] <= 120


def test_it_accepts_an_id_token_and_the_body_the_react_sdk_sends(live_server_url, api_key, hs256_project):
    form = f"grant_type={TOKEN_EXCHANGE}&subject_token={sign_hs256()}&subject_token_type=" \
           "urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aid_token"
    response = requests.post(live_server_url + "/oauth/token", data=form.encode(), timeout=30, headers={
        "x-api-key": api_key, "Content-Type": "application/x-www-form-urlencoded"})

    assert response.status_code == 200, response.text


def test_it_takes_the_user_from_the_configured_claim(live_server_url, api_key, project):
    configure_hs256(project, user_token_claim="email")

    token = exchange(live_server_url, api_key, sign_hs256(email="bob@example.com")).json()["access_token"]

    assert jwt.decode(token, options={"verify_signature": False})["sub"] == "bob@example.com"


@pytest.mark.parametrize("key", [None, "tk_not-a-real-key"])
def test_it_refuses_a_missing_or_unknown_api_key_as_invalid_client(live_server_url, hs256_project, key):
    assert_oauth_error(exchange(live_server_url, key, sign_hs256()), 401, "invalid_client")


def test_it_refuses_a_revoked_api_key(live_server_url, api_key, hs256_project):
    ApiKey.objects.update(revoked=True)

    assert_oauth_error(exchange(live_server_url, api_key, sign_hs256()), 401, "invalid_client")


def test_a_project_without_settings_refuses_the_exchange_and_says_so(live_server_url, api_key, project):
    description = assert_oauth_error(exchange(live_server_url, api_key, sign_hs256()), 400, "invalid_request")

    assert "no user-token settings" in description
    assert_nothing_written()


@pytest.mark.parametrize(("body", "content_type"), [
    (b"grant_type=a&&subject_token=b", "application/x-www-form-urlencoded"),  # malformed form
    (b"grant_type", "application/x-www-form-urlencoded"),
    (b"subject_token=%ff%fe", "application/x-www-form-urlencoded"),  # not UTF-8
    (b"", "application/x-www-form-urlencoded"),
    (json.dumps({"grant_type": TOKEN_EXCHANGE, "subject_token": "x"}).encode(), "application/json"),
    (json.dumps({"grant_type": TOKEN_EXCHANGE, "subject_token": "x"}).encode(), "application/x-www-form-urlencoded"),
    (b"grant_type=x", "text/plain"),
])
def test_it_refuses_a_body_that_is_not_a_valid_form(live_server_url, api_key, hs256_project, body, content_type):
    response = requests.post(live_server_url + "/oauth/token", data=body, timeout=30,
                             headers={"x-api-key": api_key, "Content-Type": content_type})

    assert_oauth_error(response, 400, "invalid_request")
    assert_nothing_written()


def test_it_refuses_a_parameter_given_twice(live_server_url, api_key, hs256_project):
    token = sign_hs256()
    form = f"grant_type={TOKEN_EXCHANGE}&subject_token={token}&subject_token={token}&subject_token_type=" \
           f"{ACCESS_TOKEN_TYPE}"
    response = requests.post(live_server_url + "/oauth/token", data=form, timeout=30, headers={
        "x-api-key": api_key, "Content-Type": "application/x-www-form-urlencoded"})

    assert "more than once" in assert_oauth_error(response, 400, "invalid_request")


def test_it_refuses_another_grant_type(live_server_url, api_key, hs256_project):
    response = exchange(live_server_url, api_key, sign_hs256(), grant_type="client_credentials")

    assert_oauth_error(response, 400, "unsupported_grant_type")
    assert_nothing_written()


@pytest.mark.parametrize("form", [{"grant_type": ""}, {"subject_token_type": "urn:example:saml"}])
def test_it_refuses_a_missing_grant_type_or_an_unknown_token_type(live_server_url, api_key, hs256_project, form):
    assert_oauth_error(exchange(live_server_url, api_key, sign_hs256(), **form), 400, "invalid_request")


@pytest.mark.parametrize("subject_token", [None, "", "   "])
def test_it_refuses_a_missing_subject_token(live_server_url, api_key, hs256_project, subject_token):
    response = exchange(live_server_url, api_key, subject_token)

    assert "subject_token" in assert_oauth_error(response, 400, "invalid_request")
    assert_nothing_written()


def test_it_refuses_an_unsigned_token(live_server_url, api_key, hs256_project):
    unsigned = jwt.encode(user_claims(), None, algorithm="none")

    assert_oauth_error(exchange(live_server_url, api_key, unsigned), 400, "invalid_grant")
    assert_nothing_written()


@pytest.mark.parametrize("subject_token", [
    sign_hs256(secret="a-different-secret-of-enough-length-0123456"),
    sign_hs256(secret=OTHER_HS256_SECRET),
    "not-a-jwt",
    "a.b.c",
])
def test_it_refuses_a_wrongly_signed_or_malformed_token(live_server_url, api_key, hs256_project, subject_token):
    assert_oauth_error(exchange(live_server_url, api_key, subject_token), 400, "invalid_grant")
    assert_nothing_written()


def test_it_refuses_a_token_signed_for_another_project(live_server_url, api_key, hs256_project):
    other = Project.objects.create(name="other-app")
    configure_hs256(other, OTHER_HS256_SECRET)
    theirs = sign_hs256(secret=OTHER_HS256_SECRET)

    assert_oauth_error(exchange(live_server_url, api_key, theirs), 400, "invalid_grant")


def test_it_refuses_an_expired_token_past_the_leeway(live_server_url, api_key, hs256_project):
    description = assert_oauth_error(exchange(live_server_url, api_key, sign_hs256(expires_in=-61)),
                                     400, "invalid_grant")

    assert "expired" in description
    assert_nothing_written()


def test_it_refuses_a_token_without_exp(live_server_url, api_key, hs256_project):
    token = jwt.encode({"sub": "alice"}, HS256_SECRET, algorithm="HS256")

    assert_oauth_error(exchange(live_server_url, api_key, token), 400, "invalid_grant")


@pytest.mark.parametrize("user", [None, "", "  ", 42, "x" * 257])
def test_it_refuses_a_token_whose_user_claim_is_not_a_short_string(live_server_url, api_key, hs256_project, user):
    claims = user_claims()
    claims["sub"] = user
    if user is None:
        del claims["sub"]
    token = jwt.encode(claims, HS256_SECRET, algorithm="HS256")

    assert_oauth_error(exchange(live_server_url, api_key, token), 400, "invalid_grant")


@pytest.mark.parametrize(("claims", "error_word"), [
    ({"iss": "https://evil.example"}, "iss"),
    ({}, "iss"),
    ({"iss": "https://id.example", "aud": "another-app"}, "aud"),
    ({"iss": "https://id.example"}, "aud"),
])
def test_it_checks_the_issuer_and_audience_when_they_are_set(live_server_url, api_key, project, claims, error_word):
    configure_hs256(project, user_token_issuer="https://id.example", user_token_audience="my-app")

    response = exchange(live_server_url, api_key, sign_hs256(**claims))

    assert error_word in assert_oauth_error(response, 400, "invalid_grant")


def test_it_accepts_the_right_issuer_and_audience_and_ignores_aud_when_unset(live_server_url, api_key, project):
    configure_hs256(project, user_token_issuer="https://id.example", user_token_audience="my-app")
    assert exchange(live_server_url, api_key,
                    sign_hs256(iss="https://id.example", aud=["my-app", "x"])).status_code == 200

    configure_hs256(project)
    assert exchange(live_server_url, api_key, sign_hs256(aud="whatever")).status_code == 200


def test_it_verifies_rs256_tokens_with_a_pem_public_key(live_server_url, api_key, project):
    key = rsa_key()
    configure_public_key(project, public_pem(key))

    assert exchange(live_server_url, api_key, sign_rs256(key, user="carol")).status_code == 200
    assert_oauth_error(exchange(live_server_url, api_key, sign_rs256(rsa_key())), 400, "invalid_grant")


@pytest.mark.parametrize(("private_key", "algorithm"), [
    (ec.generate_private_key(ec.SECP256R1()), "ES256"),
    (ed25519.Ed25519PrivateKey.generate(), "EdDSA"),
])
def test_it_verifies_es256_and_eddsa_tokens_with_a_pem_public_key(live_server_url, api_key, project, private_key,
                                                                  algorithm):
    configure_public_key(project, public_pem(private_key))

    token = jwt.encode(user_claims(user="erin"), private_key, algorithm=algorithm)
    rs256 = sign_rs256(rsa_key())

    assert exchange(live_server_url, api_key, token).status_code == 200
    assert_oauth_error(exchange(live_server_url, api_key, rs256), 400, "invalid_grant")


def test_it_refuses_an_hs256_token_signed_with_the_public_key_text(live_server_url, api_key, project):
    # Algorithm confusion: a verifier that takes `alg` from the token would check this HMAC with the
    # PEM text as the secret, which anyone can read.
    pem = public_pem(rsa_key())
    configure_public_key(project, pem)
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    signing_input = f"{header}.{_b64(json.dumps(user_claims()).encode())}"
    forged = f"{signing_input}.{_b64(hmac.new(pem.encode(), signing_input.encode(), hashlib.sha256).digest())}"

    assert_oauth_error(exchange(live_server_url, api_key, forged), 400, "invalid_grant")
    assert_nothing_written()


def test_it_refuses_other_methods(live_server_url, api_key):
    response = requests.get(live_server_url + "/oauth/token", headers={"x-api-key": api_key}, timeout=30)

    assert response.status_code == 405
