"""User tokens verified with the project's JWKS URL (docs/protocol.md#identity-by-token), served by a thread of the test.

The server fetches the key set once and caches it; a token naming an unknown `kid` (a rotated key)
makes it fetch again, but not within USER_TOKEN_JWKS_COOLDOWN (60 s) of the last fetch. A JWKS URL
that is down refuses the exchange with `invalid_grant`, and the server goes on serving.
"""
import jwt
import pytest
import requests
from django.test import override_settings

from projects.models import ApiKey
from tests.projects.test_token_exchange import assert_oauth_error
from tests.support.live import free_port
from tests.support.user_tokens import (
    ACCESS_TOKEN_TYPE, TOKEN_EXCHANGE, JwksServer, configure_jwks, exchange, rsa_key, sign_rs256, user_claims,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def jwks(project):
    with JwksServer() as server:
        server.keys["key-1"] = rsa_key()
        configure_jwks(project, server.url)
        yield server


def test_it_verifies_rs256_tokens_with_the_jwks_and_caches_the_key_set(live_server_url, api_key, jwks):
    for user in ("carol", "dave"):
        response = exchange(live_server_url, api_key, sign_rs256(jwks.keys["key-1"], kid="key-1", user=user))
        assert response.status_code == 200, response.text
        claims = jwt.decode(response.json()["access_token"], options={"verify_signature": False})
        assert claims["sub"] == user

    assert jwks.fetches == 1


def test_it_refuses_a_token_signed_by_a_key_not_in_the_jwks(live_server_url, api_key, jwks):
    impostor = sign_rs256(rsa_key(), kid="key-1")

    assert "signature" in assert_oauth_error(exchange(live_server_url, api_key, impostor), 400, "invalid_grant")
    assert ApiKey.objects.get().last_used_at is None


def test_an_unknown_kid_does_not_refetch_within_the_cooldown(live_server_url, api_key, jwks):
    assert exchange(live_server_url, api_key, sign_rs256(jwks.keys["key-1"], kid="key-1")).status_code == 200
    jwks.keys["key-2"] = rsa_key()

    for _ in range(3):
        response = exchange(live_server_url, api_key, sign_rs256(jwks.keys["key-2"], kid="key-2"))
        assert "kid" in assert_oauth_error(response, 400, "invalid_grant")

    assert jwks.fetches == 1


def _exchange_in_process(client, api_key: str, token: str):
    form = f"grant_type={TOKEN_EXCHANGE}&subject_token={token}&subject_token_type={ACCESS_TOKEN_TYPE}"
    return client.post("/oauth/token", data=form, content_type="application/x-www-form-urlencoded",
                       headers={"x-api-key": api_key})


@override_settings(USER_TOKEN_JWKS_COOLDOWN=0)
def test_a_rotated_key_is_fetched_when_a_token_names_its_kid(client, api_key, jwks):
    assert _exchange_in_process(client, api_key, sign_rs256(jwks.keys["key-1"], kid="key-1")).status_code == 200
    jwks.keys = {"key-2": rsa_key()}  # the provider rotated its key

    response = _exchange_in_process(client, api_key, sign_rs256(jwks.keys["key-2"], kid="key-2"))

    assert response.status_code == 200, response.content
    assert jwks.fetches == 2


def test_a_symmetric_key_in_the_jwks_is_never_used(live_server_url, api_key, jwks):
    # Anyone can read a JWKS: an HS256 "key" published there would let anyone sign.
    secret = "published-for-all-to-see-0123456789abcdef"
    jwks.extra_jwks.append({"kty": "oct", "kid": "shared", "k": jwt.utils.base64url_encode(secret.encode()).decode()})
    token = jwt.encode(user_claims(), secret, algorithm="HS256", headers={"kid": "shared"})

    assert_oauth_error(exchange(live_server_url, api_key, token), 400, "invalid_grant")


def test_an_unsigned_token_naming_a_jwks_kid_is_refused(live_server_url, api_key, jwks):
    unsigned = jwt.encode(user_claims(), None, algorithm="none", headers={"kid": "key-1"})

    assert_oauth_error(exchange(live_server_url, api_key, unsigned), 400, "invalid_grant")


def test_a_jwks_url_that_is_down_refuses_the_exchange_and_the_server_goes_on(live_server_url, api_key, project):
    configure_jwks(project, f"http://127.0.0.1:{free_port()}/jwks.json")  # nothing listens there
    token = sign_rs256(rsa_key(), kid="key-1")

    description = assert_oauth_error(exchange(live_server_url, api_key, token), 400, "invalid_grant")

    assert "could not be reached" in description
    assert requests.get(live_server_url + "/v1/threads", params={"userKey": "alice"},
                        headers={"x-api-key": api_key}, timeout=30).status_code == 200
    assert ApiKey.objects.get().last_used_at is not None  # by the /v1 call, not by the refused exchange


@pytest.mark.parametrize("body", [b"<html>not json</html>", b"[1, 2]", b'{"keys": [{"kty": "nope"}]}', b"{}"])
def test_a_jwks_url_answering_something_else_refuses_the_exchange(live_server_url, api_key, jwks, body):
    jwks.raw_body = body

    response = exchange(live_server_url, api_key, sign_rs256(jwks.keys["key-1"], kid="key-1"))

    assert_oauth_error(response, 400, "invalid_grant")


def test_a_token_without_kid_is_refused_without_fetching_the_jwks(live_server_url, api_key, jwks):
    response = exchange(live_server_url, api_key, sign_rs256(jwks.keys["key-1"]))

    assert "kid" in assert_oauth_error(response, 400, "invalid_grant")
    assert jwks.fetches == 0
