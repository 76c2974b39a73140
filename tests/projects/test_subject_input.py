"""A subject token whose user fails the input checks is refused at the exchange (400 invalid_grant),
not exchanged into an access token that makes every later call answer 500."""
from __future__ import annotations

import pytest
import requests

from tests.support.run_requests import user_message
from tests.support.sse import read_events, types
from tests.support.user_tokens import access_token, configure_hs256, exchange, sign_hs256

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


def test_the_longest_allowed_subject_finishes_a_run_and_its_usage_is_recorded(live_server_url, api_key, project):
    # On PostgreSQL, where column lengths are enforced: the stored key is `token:` + the claim, 262
    # characters, and the usage row's column was 256 (StringDataRightTruncation, RUN_ERROR, the thread
    # locked for the lease). SQLite never saw it.
    from projects.identities import token_user
    from telemetry.models import Usage

    configure_hs256(project)
    subject = "u" * 256
    token = access_token(live_server_url, api_key, sign_hs256(user=subject))
    session = requests.Session()
    session.headers.update({"Authorization": f"Bearer {token}", "x-api-key": api_key})

    response = session.post(live_server_url + "/v1/threads/runs", json={"message": user_message("hello")},
                            stream=True, timeout=30)

    assert response.status_code == 200, response.text
    events = read_events(response)
    assert types(events)[-1] == "RUN_FINISHED", events[-3:]
    assert Usage.objects.filter(project=project, user_key=token_user(subject), kind=Usage.Kind.RUN).count() == 1
    # The next run on the same thread is not blocked by a lock left behind.
    again = session.post(live_server_url + f"/v1/threads/{response.headers['X-Thread-Id']}/runs",
                         json={"message": user_message("again"), "previousRunId": events[-1]["runId"]}, stream=True, timeout=30)
    assert again.status_code == 200, again.text
    assert types(read_events(again))[-1] == "RUN_FINISHED"


def test_every_stored_user_key_column_holds_the_longest_stored_key():
    from django.apps import apps

    from projects.identities import LOGIN_PREFIX, TOKEN_PREFIX, USER_KEY_MAX_LENGTH

    longest = max(len(TOKEN_PREFIX), len(LOGIN_PREFIX)) + USER_KEY_MAX_LENGTH
    short = [f"{model.__name__}.{field.name} ({field.max_length})" for model in apps.get_models()
             for field in model._meta.get_fields() if field.name == "user_key" and field.max_length < longest]
    assert short == []
