"""A JWKS URL that stalls (projects/user_tokens.py `_GuardedJWKClient`): one that never answers costs
one wait, not one per exchange (the failure is remembered for a few seconds); one that trickles its
answer is cut at USER_TOKEN_JWKS_TIMEOUT (3 s) for the whole read, not per byte."""
import json

import pytest

from tests.projects.test_token_exchange import assert_oauth_error
from tests.support.stalling_http import HangingListener, TricklingServer
from tests.support.user_tokens import configure_jwks, exchange, rsa_key, sign_rs256

pytestmark = pytest.mark.django_db(transaction=True)


def test_exchanges_against_a_hanging_jwks_fetch_it_once(live_server_url, api_key, project):
    with HangingListener() as jwks:
        configure_jwks(project, jwks.url("/jwks.json"))
        answers = [exchange(live_server_url, api_key, sign_rs256(rsa_key(), kid=f"kid-{i}")) for i in range(10)]
        connections = len(jwks.accepted)
    for answer in answers:
        assert "could not be reached" in assert_oauth_error(answer, 400, "invalid_grant")
    # The first exchange waited for the fetch; the other nine were refused with its failure.
    assert connections == 1


def test_a_trickling_jwks_is_cut_at_the_timeout_for_the_whole_read(live_server_url, api_key, project):
    body = json.dumps({"keys": [], "padding": "x" * 60}).encode()
    # A byte every 0.25 s: 80+ bytes are 20 s, past any per-byte timeout (3 s) never reached.
    with TricklingServer(body, interval=0.25) as jwks:
        configure_jwks(project, jwks.url("/jwks.json"))
        answer = exchange(live_server_url, api_key, sign_rs256(rsa_key(), kid="kid-1"))
        sent_when_answered = jwks.sent
    assert "could not be reached" in assert_oauth_error(answer, 400, "invalid_grant")
    # Answered while the JWKS was still sending: the deadline covered the whole read.
    assert sent_when_answered < len(body) // 2, (sent_when_answered, len(body))
