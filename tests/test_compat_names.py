"""Thread names and suggestions through the official JavaScript packages, under Node.

Each test runs one scenario of `tests/compat/names.mjs` (`@tambo-ai/client` 1.1.x and the
`@tambo-ai/typescript-sdk` 0.96.x it holds, installed by `npm ci` in tests/compat) against the live
server, fails with the script's own message on any mismatch, then checks through the REST API what
the server stored.
"""
from __future__ import annotations


import pytest

from tests.support import node

pytestmark = pytest.mark.django_db(transaction=True)



def run_scenario(name: str, base_url: str, api_key: str, **env: str) -> dict:
    return node.run_scenario("names.mjs", name, base_url, api_key, extra_env=env)


def test_the_official_sdk_names_a_thread_the_official_client_made(live_server_url, api_key, api, project):
    result = run_scenario("generate_name", live_server_url, api_key)

    thread = api.get(f"/v1/threads/{result['threadId']}").json()
    assert thread["name"] == result["name"] == "Plan a weekend in Lisbon with museums"
    assert result["projectId"] == project.id


def test_suggestions_made_and_listed_as_the_react_hooks_do_are_stored(live_server_url, api_key, api):
    result = run_scenario("suggestions_v1", live_server_url, api_key)

    listed = api.get(f"/v1/threads/{result['threadId']}/messages/{result['messageId']}/suggestions").json()
    assert [s["id"] for s in listed["suggestions"]] == result["suggestionIds"]
    assert [s["title"] for s in listed["suggestions"]] == ["Show WeatherCard", "Tell me more"]


def test_the_official_clients_user_less_calls_are_refused_when_tokens_are_required(live_server_url, api_key,
                                                                                   project):
    from projects.config import ProjectSettings, project_settings_save
    from tests.assist.conftest import conversation

    thread, (_, answer) = conversation(project, ("user", "Bridges?"), ("assistant", "Many."))
    project_settings_save(project, ProjectSettings(token_required=True))

    result = run_scenario("user_less_refused", live_server_url, api_key, TAMBO_THREAD_ID=thread.id,
                          TAMBO_MESSAGE_ID=answer.id)

    assert result["threadId"] == thread.id
    assert thread.messages.count() == 2 and not answer.suggestions.exists()


def test_the_official_clients_suggestion_calls_use_the_older_paths(live_server_url, api_key, api):
    result = run_scenario("suggestions_client", live_server_url, api_key)

    listed = api.get(f"/threads/{result['threadId']}/messages/{result['messageId']}/suggestions").json()
    assert [s["id"] for s in listed] == result["suggestionIds"]
