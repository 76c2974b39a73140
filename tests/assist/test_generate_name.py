"""POST /threads/{threadId}/generate-name with the offline model (docs/protocol.md#thread-names-and-suggestions)."""
from __future__ import annotations

import pytest
import requests

from tests.assist.conftest import conversation
from tests.conftest import Api
from tests.runs.conftest import Runs
from tests.support.problems import assert_problem
from tests.support.sse import iter_events

pytestmark = pytest.mark.django_db(transaction=True)


def generate_name(api: Api, thread_id: str, **params) -> requests.Response:
    params.setdefault("userKey", api.user_key)
    return api.session.post(f"{api.base_url}/threads/{thread_id}/generate-name",
                            params={k: v for k, v in params.items() if v is not None}, timeout=30)


def test_it_names_the_thread_after_its_first_user_text_cut_at_a_word(api, project):
    thread, _ = conversation(project, ("assistant", "Hello, how can I help?"),
                             ("user", "Plan a weekend in Lisbon with museums, seafood and old trams"),
                             ("assistant", "Sure."), ("user", "Something else entirely"))

    response = generate_name(api, thread.id)

    assert response.status_code == 200, response.text
    body = response.json()
    # At most 40 characters, cut at the space before "seafood", and the dangling comma dropped.
    assert body["name"] == "Plan a weekend in Lisbon with museums"
    assert body["id"] == thread.id
    assert body["projectId"] == project.id
    assert body["userKey"] == "alice"
    assert body["runStatus"] == "idle"
    assert {"createdAt", "updatedAt"} <= set(body)
    assert body["updatedAt"] > body["createdAt"]
    assert api.get(f"/v1/threads/{thread.id}").json()["name"] == body["name"]


def test_a_short_first_text_is_the_whole_name(api, project):
    thread, _ = conversation(project, ("user", "  Bridges   of\nHamburg "))

    assert generate_name(api, thread.id).json()["name"] == "Bridges of Hamburg"


def test_a_first_word_longer_than_the_limit_is_cut_inside_it(api, project):
    thread, _ = conversation(project, ("user", "x" * 70))

    assert generate_name(api, thread.id).json()["name"] == "x" * 40


def test_naming_again_replaces_the_name(api, project):
    thread, _ = conversation(project, ("user", "Bridges"))
    api.patch(f"/v1/threads/{thread.id}", {"name": "Old name"})

    assert generate_name(api, thread.id).json()["name"] == "Bridges"


def test_it_accepts_the_beta_sdks_context_key_as_the_user(api, project):
    thread, _ = conversation(project, ("user", "Bridges"))

    response = generate_name(api, thread.id, userKey=None, contextKey="alice")

    assert response.status_code == 200, response.text
    assert response.json()["name"] == "Bridges"


@pytest.mark.parametrize("turns", [(), (("assistant", "Welcome!"),), (("user", "   "),)])
def test_it_refuses_a_thread_without_user_text(api, project, turns):
    thread, _ = conversation(project, *turns)

    assert_problem(generate_name(api, thread.id), 400, "VALIDATION_ERROR")
    assert "name" not in api.get(f"/v1/threads/{thread.id}").json()


def test_a_browser_app_on_another_origin_may_call_it(api, project):
    thread, _ = conversation(project, ("user", "Bridges"))
    url = f"{api.base_url}/threads/{thread.id}/generate-name"

    preflight = requests.options(url, headers={"Origin": "https://app.example", "Access-Control-Request-Method": "POST",
                                               "Access-Control-Request-Headers": "x-api-key, x-stainless-os"},
                                 timeout=30)
    response = api.session.post(url, params={"userKey": "alice"}, headers={"Origin": "https://app.example"},
                                timeout=30)

    assert preflight.status_code == 204
    assert preflight.headers["Access-Control-Allow-Headers"] == "x-api-key, x-stainless-os"
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == "*"


def test_an_unknown_thread_is_not_found(api):
    assert_problem(generate_name(api, "thr_doesnotexist"), 404, "THREAD_NOT_FOUND")


def test_another_users_thread_is_not_found_and_keeps_its_name(api, project):
    thread, _ = conversation(project, ("user", "Secret plans"), user_key="bob")

    assert_problem(generate_name(api, thread.id), 404, "THREAD_NOT_FOUND")
    thread.refresh_from_db()
    assert thread.name is None


def test_another_projects_key_does_not_see_the_thread(live_server_url, other_project_key, project):
    thread, _ = conversation(project, ("user", "Secret plans"))

    assert_problem(generate_name(Api(live_server_url, other_project_key), thread.id), 404, "THREAD_NOT_FOUND")


def test_it_needs_a_user_key(api, project):
    thread, _ = conversation(project, ("user", "Bridges"))

    assert_problem(generate_name(api, thread.id, userKey=None), 400, "VALIDATION_ERROR", field="userKey")


def test_it_needs_an_api_key(live_server_url, project):
    thread, _ = conversation(project, ("user", "Bridges"))

    assert_problem(generate_name(Api(live_server_url, None), thread.id), 401, "UNAUTHORIZED")


def test_an_unknown_path_beside_it_is_a_not_found_problem(api, project):
    thread, _ = conversation(project, ("user", "Bridges"))

    response = api.session.post(f"{api.base_url}/threads/{thread.id}/generate-names", timeout=30)

    assert_problem(response, 404, "NOT_FOUND")


def test_only_post_is_allowed(api, project):
    thread, _ = conversation(project, ("user", "Bridges"))

    response = api.get(f"/threads/{thread.id}/generate-name")

    assert_problem(response, 405, "METHOD_NOT_ALLOWED")


def test_a_failing_model_is_a_retryable_bad_gateway_problem(api, project):
    thread, _ = conversation(project, ("user", "!fail please"))

    body = assert_problem(generate_name(api, thread.id), 502, "LLM_SERVER_ERROR")

    assert body["isRetryable"] is True
    assert body["category"] == "server_error"
    assert "name" not in api.get(f"/v1/threads/{thread.id}").json()


@pytest.mark.both_dbs
def test_it_names_a_thread_while_a_run_streams_on_it_and_the_run_keeps_the_name(api, project):
    thread, _ = conversation(project, ("user", "Weekend in Porto"), ("assistant", "Nice choice."))
    runs = Runs(api)
    stream = runs.post(thread.id, "!slow")
    assert stream.status_code == 200, stream.text
    events = iter_events(stream)
    run_id = next(events)["runId"]
    while next(events)["type"] != "TEXT_MESSAGE_CONTENT":
        pass  # the run is producing text now

    response = generate_name(api, thread.id)

    assert response.status_code == 200, response.text
    assert response.json()["name"] == "Weekend in Porto"
    assert response.json()["runStatus"] == "streaming"
    assert response.json()["currentRunId"] == run_id
    assert api.delete(f"/v1/threads/{thread.id}/runs/{run_id}").status_code == 200
    assert [e["type"] for e in events][-1] == "RUN_ERROR"
    after = runs.wait_idle(thread.id)
    assert after["name"] == "Weekend in Porto"
    assert after["lastRunCancelled"] is True
