"""Access tokens are signed with a random secret of each project, stored and rotatable.

Before, the signing key was derived from SECRET_KEY, whose development default is in the code: anyone
could read the project and key ids from their own token and sign `sub: victim` (the sweep's repro).
"""
from __future__ import annotations

import jwt
import pytest
import requests
from django.core.management import call_command
from django.utils.crypto import salted_hmac

from projects.models import Project
from tests.support.problems import assert_problem
from tests.support.user_tokens import access_token, configure_hs256, sign_hs256
from threads import services
from projects.identities import token_user

pytestmark = pytest.mark.django_db(transaction=True)


def _threads(base_url: str, token: str) -> requests.Response:
    return requests.get(base_url + "/v1/threads", headers={"Authorization": f"Bearer {token}"}, timeout=30)


def _resigned(token: str, key: bytes | str, **changes) -> str:
    claims = jwt.decode(token, options={"verify_signature": False})
    return jwt.encode({**claims, **changes}, key, algorithm="HS256")


def test_a_token_signed_with_the_key_derived_from_the_secret_key_is_refused(live_server_url, api_key, project,
                                                                          settings):
    configure_hs256(project)
    services.thread_create(project=project, user_key=token_user("victim"))
    own = access_token(live_server_url, api_key, sign_hs256(user="mallory"))
    # What the old code signed with. The test shares the server's SECRET_KEY, standing for a forger who
    # knows it (the development default is public): knowing it must not be enough any more.
    derived = salted_hmac("tambo_project.user_tokens.access_token", project.pk, algorithm="sha256").digest()

    forged = _threads(live_server_url, _resigned(own, derived, sub="victim"))

    assert_problem(forged, 401, "UNAUTHORIZED")
    assert _threads(live_server_url, own).status_code == 200


def test_each_project_has_its_own_random_secret(project, other_project_key):
    secrets = list(Project.objects.values_list("access_token_secret", flat=True))

    assert len(secrets) == 2 and len(set(secrets)) == 2 and all(len(s) >= 48 for s in secrets)


def test_rotating_the_secret_ends_every_token_issued_before(live_server_url, api_key, project, capsys):
    configure_hs256(project)
    before = access_token(live_server_url, api_key, sign_hs256(user="alice"))
    assert _threads(live_server_url, before).status_code == 200

    call_command("rotate_access_token_secret", project.name)

    assert_problem(_threads(live_server_url, before), 401, "UNAUTHORIZED")
    after = access_token(live_server_url, api_key, sign_hs256(user="alice"))
    assert _threads(live_server_url, after).status_code == 200
    assert "Rotated" in capsys.readouterr().out
