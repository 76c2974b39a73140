"""Component state over real HTTP (docs/protocol.md#components): `POST /v1/threads/{id}/components/{componentId}/state`
with a full `state` or a JSON Patch `patch`, its errors, and the model seeing the current state later.
"""
from __future__ import annotations

import json

import pytest

from tests.conftest import Api
from tests.support.fake_openai import Text, ToolCall, ToolCalls
from tests.support.problems import assert_problem
from tests.support.run_requests import last_run_id, run
from tests.support.sse import iter_events, types

pytestmark = pytest.mark.django_db(transaction=True)

CARD = {"name": "Card", "description": "A card.",
        "propsSchema": {"type": "object", "properties": {"title": {"type": "string"}}}}


def render_card(api: Api) -> tuple[str, str]:
    """A thread with one Card component rendered by the offline model: (thread id, component id)."""
    thread_id, events = run(api, 'Show a Card {"title": "Hello"}', availableComponents=[CARD])
    [start] = [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == "tambo.component.start"]
    return thread_id, start["componentId"]


def post_state(api: Api, thread_id: str, component_id: str, **body):
    return api.post(f"/v1/threads/{thread_id}/components/{component_id}/state", {"userKey": api.user_key, **body})




@pytest.mark.both_dbs
def test_a_full_state_replaces_the_component_state(api):
    thread_id, component_id = render_card(api)
    assert api.block(thread_id, "component", id=component_id)["state"] == {}
    response = post_state(api, thread_id, component_id, state={"open": True, "picked": [1, 2]})
    assert response.status_code == 200, response.text
    assert response.json() == {"state": {"open": True, "picked": [1, 2]}}
    response = post_state(api, thread_id, component_id, state={"open": False})
    assert response.json() == {"state": {"open": False}}
    block = api.block(thread_id, "component", id=component_id)
    assert block["state"] == {"open": False}
    assert block["props"] == {"title": "Hello"}  # props are not touched


@pytest.mark.both_dbs
def test_a_json_patch_updates_the_current_state(api):
    thread_id, component_id = render_card(api)
    post_state(api, thread_id, component_id, state={"count": 1, "tags": ["a"]})
    response = post_state(api, thread_id, component_id, patch=[
        {"op": "replace", "path": "/count", "value": 2},
        {"op": "add", "path": "/tags/-", "value": "b"},
        {"op": "add", "path": "/nested", "value": {"deep": True}},
    ])
    assert response.status_code == 200, response.text
    expected = {"count": 2, "tags": ["a", "b"], "nested": {"deep": True}}
    assert response.json() == {"state": expected}
    assert api.block(thread_id, "component", id=component_id)["state"] == expected
    # A patch can also start from the empty state of a fresh component.
    _, events = run(api, 'Another Card {"title": "Two"}', thread_id=thread_id,
                    previousRunId=last_run_id(api, thread_id), availableComponents=[CARD])
    second = next(e["value"]["componentId"] for e in events if e.get("name") == "tambo.component.start")
    response = post_state(api, thread_id, second, patch=[{"op": "add", "path": "/x", "value": 1}])
    assert response.json() == {"state": {"x": 1}}
    assert api.block(thread_id, "component", id=component_id)["state"] == expected  # the other one is untouched


def test_a_patch_that_does_not_apply_is_rejected_and_the_state_is_unchanged(api):
    thread_id, component_id = render_card(api)
    post_state(api, thread_id, component_id, state={"count": 1})
    for patch in (
        [{"op": "remove", "path": "/missing"}],
        [{"op": "test", "path": "/count", "value": 2}],
        [{"op": "frobnicate", "path": "/count"}],
        [{"op": "add", "value": 1}],
        [{"op": "add", "path": "count", "value": 1}],
        [{"op": "add", "path": "/count/deeper", "value": 1}],
        [{"op": "replace", "path": "", "value": [1, 2]}],  # the state must stay an object
        [{"op": "replace", "path": "/count", "value": 5}, {"op": "remove", "path": "/nope"}],  # all or nothing
    ):
        assert_problem(post_state(api, thread_id, component_id, patch=patch), 400, "INVALID_JSON_PATCH")
    assert api.block(thread_id, "component", id=component_id)["state"] == {"count": 1}


def test_it_requires_exactly_one_of_state_and_a_non_empty_patch(api):
    thread_id, component_id = render_card(api)
    for body in ({}, {"state": {"a": 1}, "patch": [{"op": "add", "path": "/a", "value": 1}]}, {"patch": []},
                 {"state": [1, 2]}, {"patch": {"op": "add"}}):
        assert_problem(post_state(api, thread_id, component_id, **body), 400, "VALIDATION_ERROR")
    response = api.post(f"/v1/threads/{thread_id}/components/{component_id}/state", {"state": {"a": 1}})
    assert_problem(response, 400, "VALIDATION_ERROR")  # no userKey
    assert api.block(thread_id, "component", id=component_id)["state"] == {}


def test_an_unknown_component_or_someone_elses_thread_is_not_found(api, api_key, live_server_url):
    thread_id, component_id = render_card(api)
    assert_problem(post_state(api, thread_id, "comp_doesnotexist", state={"a": 1}), 404, "COMPONENT_NOT_FOUND")
    assert_problem(post_state(api, "thr_doesnotexist", component_id, state={"a": 1}), 404, "THREAD_NOT_FOUND")
    bob = Api(live_server_url, api_key, user_key="bob")
    assert_problem(post_state(bob, thread_id, component_id, state={"a": 1}), 404, "THREAD_NOT_FOUND")
    # A message id or a tool call id is not a component id.
    message_id = api.get(f"/v1/threads/{thread_id}").json()["messages"][0]["id"]
    assert_problem(post_state(api, thread_id, message_id, state={"a": 1}), 404, "COMPONENT_NOT_FOUND")
    assert api.block(thread_id, "component", id=component_id)["state"] == {}


def test_another_projects_key_cannot_set_the_state(api, other_project_key, live_server_url):
    thread_id, component_id = render_card(api)
    other = Api(live_server_url, other_project_key)
    assert_problem(post_state(other, thread_id, component_id, state={"a": 1}), 404, "THREAD_NOT_FOUND")


@pytest.mark.both_dbs
def test_the_state_cannot_change_while_a_run_is_active(api):
    thread_id, component_id = render_card(api)
    response = api.post(f"/v1/threads/{thread_id}/runs", {
        "userKey": "alice", "previousRunId": last_run_id(api, thread_id),
        "message": {"role": "user", "content": [{"type": "text", "text": "!slow please"}]}}, stream=True)
    assert response.status_code == 200, response.text
    run_id = response.headers["X-Run-Id"]
    events = iter_events(response)
    assert next(events)["type"] == "RUN_STARTED"
    problem = assert_problem(post_state(api, thread_id, component_id, state={"a": 1}), 409, "RUN_ACTIVE")
    assert problem["currentRunId"] == run_id
    assert api.delete(f"/v1/threads/{thread_id}/runs/{run_id}").status_code == 200
    rest = list(events)
    assert rest[-1]["type"] == "RUN_ERROR" and rest[-1]["code"] == "CANCELLED"
    # Once the run is over the state can be set again.
    assert post_state(api, thread_id, component_id, state={"a": 1}).json() == {"state": {"a": 1}}


# --- The model sees the current state (openai fake records what it is sent) --------------------------------

def test_the_model_sees_each_components_current_state_in_the_next_turn(fake, oapi):
    fake.script(ToolCalls([ToolCall("show_component_Card", ['{"tit', 'le": "Pick one"}'], id="call_card")]),
                Text("Pick a number."))
    thread_id, events = run(oapi, "let me pick", availableComponents=[CARD])
    component_id = next(e["value"]["componentId"] for e in events if e.get("name") == "tambo.component.start")
    post_state(oapi, thread_id, component_id, state={"picked": 3, "history": []})
    post_state(oapi, thread_id, component_id, patch=[{"op": "add", "path": "/history/-", "value": 3}])
    before = len(fake.requests)
    fake.script(Text("You picked 3."))
    _, events = run(oapi, "what did I pick?", thread_id=thread_id, previousRunId=last_run_id(oapi, thread_id),
                    availableComponents=[CARD])
    assert types(events)[-1] == "RUN_FINISHED"
    messages = fake.requests[before].body["messages"]
    call_index = next(i for i, m in enumerate(messages) if m["role"] == "assistant" and m.get("tool_calls"))
    call = messages[call_index]["tool_calls"][0]
    assert (call["id"], call["function"]["name"]) == ("call_card", "show_component_Card")
    assert json.loads(call["function"]["arguments"]) == {"title": "Pick one"}
    state_text = (f"Component Card ({component_id}) is shown to the user. "
                  'Its current state: {"picked": 3, "history": [3]}')
    assert messages[call_index + 1] == {"role": "tool", "tool_call_id": "call_card", "content": state_text}
    # The conversation stays well formed: the text the model said after the component, then the new question.
    assert [m["role"] for m in messages[call_index + 2:]] == ["assistant", "user"]
    assert messages[-1]["content"] == "what did I pick?"
