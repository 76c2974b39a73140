"""A subject token whose user fails the input checks is refused at the exchange (400 invalid_grant),
not exchanged into an access token that makes every later call answer 500."""
from __future__ import annotations

import pytest

from tests.support.user_tokens import configure_hs256, exchange, sign_hs256

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(("user", "said"), [("a\u0000b", "NUL"), ("a\ud800b", "surrogate"),
                                            ("u" * 257, "at most 256"), ("   ", "non-empty")])
def test_a_subject_the_input_checks_refuse_is_not_exchanged(live_server_url, api_key, project, user, said):
    configure_hs256(project)

    response = exchange(live_server_url, api_key, sign_hs256(user=user))

    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_grant"
    assert said in response.json()["error_description"]


def test_the_longest_allowed_subject_is_exchanged(live_server_url, api_key, project):
    configure_hs256(project)

    response = exchange(live_server_url, api_key, sign_hs256(user="u" * 256))

    assert response.status_code == 200, response.text
