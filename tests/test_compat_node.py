"""The official JavaScript packages work unchanged against this server, proven under Node.

Each test runs one scenario of `tests/compat/run.mjs` (the official `@tambo-ai/client` 1.1.x and
`@tambo-ai/typescript-sdk` 0.96.x, installed by `npm ci` in tests/compat; bin/test does it) against the
live server, fails with the script's own message on any mismatch, then checks through the REST API
what the server stored.
"""
from __future__ import annotations

import json

import pytest
import requests

from projects.models import ApiKey
from tests.support import node
from tests.support.node import USER_KEY

pytestmark = pytest.mark.django_db(transaction=True)



def run_scenario(name: str, base_url: str, api_key: str, extra_env: dict[str, str] | None = None) -> dict:
    return node.run_scenario("run.mjs", name, base_url, api_key, extra_env=extra_env)




def test_the_official_client_streams_a_text_run_on_a_new_thread(live_server_url, api_key, api):
    result = run_scenario("text_run", live_server_url, api_key)

    thread = api.thread(result["threadId"])
    assert thread["runStatus"] == "idle"
    assert thread["userKey"] == USER_KEY
    assert thread["lastCompletedRunId"] == result["secondRunId"]
    assert [m["role"] for m in thread["messages"]] == ["user", "assistant", "user", "assistant"]
    assert thread["messages"][1]["id"] == result["assistantMessageId"]
    assert thread["messages"][1]["content"] == [{"type": "text", "text": result["assistantText"]}]


def test_a_tool_registered_with_the_official_client_is_called_run_by_the_client_and_continued(
        live_server_url, api_key, api):
    result = run_scenario("client_tool", live_server_url, api_key)

    thread = api.thread(result["threadId"])
    assert thread["runStatus"] == "idle"
    assert "pendingToolCallIds" not in thread
    assert thread["lastCompletedRunId"] == result["continuationRunId"]
    blocks = [block for message in thread["messages"] for block in message["content"]]
    assert [b["type"] for b in blocks] == ["text", "tool_use", "tool_result", "text"]
    assert blocks[1] == {"type": "tool_use", "id": result["toolCallId"], "name": "lookup_weather",
                         "input": {"city": "Paris"}}
    assert blocks[2]["toolUseId"] == result["toolCallId"]
    assert json.loads(blocks[2]["content"][0]["text"]) == {"city": "Paris", "forecast": "sunny", "highC": 21}
    assert blocks[3]["text"] == result["finalText"]


def test_two_client_tools_in_one_step_are_answered_together_including_a_failing_one(live_server_url, api_key, api):
    result = run_scenario("two_client_tools", live_server_url, api_key)

    thread = api.thread(result["threadId"])
    assert "pendingToolCallIds" not in thread
    results = {b["toolUseId"]: b for m in thread["messages"] for b in m["content"] if b["type"] == "tool_result"}
    weather_id, explode_id = result["toolCallIds"]
    assert set(results) == {weather_id, explode_id}
    assert "isError" not in results[weather_id]
    assert results[explode_id]["isError"] is True
    assert results[explode_id]["content"] == [{"type": "text", "text": "boom"}]
    user = thread["messages"][0]
    assert user["content"] == [{"type": "text", "text": 'Use lookup_weather, then explode, with {"city": "Rome"}'}]


def test_the_official_client_shows_a_server_tools_result_in_the_same_run(live_server_url, api_key, api, project):
    from tools.models import ProjectTool

    ProjectTool.objects.create(project=project, name="calculate")

    result = run_scenario("server_tool", live_server_url, api_key)

    thread = api.thread(result["threadId"])
    results = [b for m in thread["messages"] for b in m["content"] if b["type"] == "tool_result"]
    assert results == [{"type": "tool_result", "toolUseId": result["toolCallId"],
                        "content": [{"type": "text", "text": "42"}]}]
    assert thread["messages"][-1]["content"] == [{"type": "text", "text": "Tool calculate returned: 42"}]


def test_the_official_client_lists_the_threads_of_its_user_newest_first(live_server_url, api_key, api):
    result = run_scenario("list_threads", live_server_url, api_key)

    first, second = result["threadIds"]
    assert result["listedIds"] == [second, first]
    listed = api.get("/v1/threads").json()
    assert [t["id"] for t in listed["threads"]] == [second, first]


def test_a_thread_made_by_the_official_client_is_fetched_and_renamed_through_the_sdk(live_server_url, api_key, api):
    result = run_scenario("fetch_thread", live_server_url, api_key)

    thread = api.thread(result["threadId"])
    assert thread["name"] == "Renamed by the SDK"
    assert thread["lastCompletedRunId"] == result["lastCompletedRunId"]


def _assert_cancelled(api, result: dict) -> None:
    thread = api.thread(result["threadId"])
    assert thread["runStatus"] == "idle"
    assert thread["lastRunCancelled"] is True
    assert "currentRunId" not in thread
    last = thread["messages"][-1]
    assert last["id"] == result["partialMessageId"]
    assert last["isCancelled"] is True
    assert last["content"] == [{"type": "text", "text": result["partialText"]}]


def test_cancel_run_in_the_official_client_stops_the_run_on_the_server(live_server_url, api_key, api):
    result = run_scenario("cancel_run", live_server_url, api_key)

    _assert_cancelled(api, result)


def test_aborting_the_official_clients_stream_cancels_the_run(live_server_url, api_key, api):
    result = run_scenario("abort_signal", live_server_url, api_key)

    _assert_cancelled(api, result)


def test_a_component_registered_with_the_official_client_renders_and_keeps_its_state(live_server_url, api_key, api):
    result = run_scenario("component", live_server_url, api_key)

    thread = api.thread(result["threadId"])
    components = [b for m in thread["messages"] for b in m["content"] if b["type"] == "component"]
    assert len(components) == 1
    assert components[0]["id"] == result["componentId"]
    assert components[0]["name"] == "WeatherCard"
    assert components[0]["props"] == {"city": "Oslo", "tempC": -3, "tags": ["cold", "clear"]}
    assert components[0]["state"] == {"expanded": True, "unit": "F", "pinned": 1}


# --- userToken mode (docs/protocol.md#identity-by-token): the scenarios sign an HS256 user token for USER_KEY ---------

def run_token_scenario(name: str, base_url: str, api_key: str, project) -> dict:
    from tests.support.user_tokens import HS256_SECRET, configure_hs256

    configure_hs256(project)
    return run_scenario(name, base_url, api_key, {"TAMBO_USER_TOKEN_SECRET": HS256_SECRET})


class TokenUser:
    """Reads threads as the scenarios' token user: a `userKey` of the same name is another user
    (docs/abuse-and-limits.md), so the thread is read with a bearer of that user."""

    def __init__(self, base_url: str, api_key: str):
        from tests.support.user_tokens import access_token, sign_hs256, user_claims

        self.base_url = base_url
        self.bearer = access_token(base_url, api_key, sign_hs256(**user_claims(USER_KEY)))

    def thread(self, thread_id: str) -> dict:
        response = requests.get(f"{self.base_url}/v1/threads/{thread_id}", timeout=30,
                                headers={"Authorization": f"Bearer {self.bearer}"})
        assert response.status_code == 200, response.text
        return response.json()


def test_the_sdk_exchanges_a_user_token_and_its_bearer_names_the_user(live_server_url, api_key, api, project):
    result = run_token_scenario("token_exchange", live_server_url, api_key, project)

    assert TokenUser(live_server_url, api_key).thread(result["threadId"])["userKey"] == USER_KEY
    assert api.get(f"/v1/threads/{result['threadId']}").status_code == 404  # not the userKey of that name
    assert ApiKey.objects.get().last_used_at is not None


def test_the_official_client_fetches_switches_and_renames_threads_with_a_bearer(live_server_url, api_key, api,
                                                                                 project):
    result = run_token_scenario("token_fetch_thread", live_server_url, api_key, project)

    user = TokenUser(live_server_url, api_key)
    made, other = (user.thread(thread_id) for thread_id in result["threadIds"])
    assert made["name"] == "Renamed with a user token"
    assert made["userKey"] == other["userKey"] == USER_KEY
    assert [m["role"] for m in made["messages"]] == ["user", "assistant"]


def test_cancel_run_in_the_official_client_cancels_on_the_server_with_a_bearer(live_server_url, api_key, api,
                                                                                project):
    result = run_token_scenario("token_cancel_run", live_server_url, api_key, project)

    _assert_cancelled(TokenUser(live_server_url, api_key), result)
