"""Suggestions for an assistant message, /v1 and the SDK's older paths, with the offline model (docs/protocol.md#thread-names-and-suggestions)."""
from __future__ import annotations

import pytest

from concurrent.futures import ThreadPoolExecutor

from tests.assist.conftest import BAR_CHART, DATA_CARD, conversation
from tests.conftest import Api
from tests.support.problems import assert_problem

pytestmark = pytest.mark.django_db(transaction=True)


def v1_path(thread_id: str, message_id: str) -> str:
    return f"/v1/threads/{thread_id}/messages/{message_id}/suggestions"


def legacy_path(thread_id: str, message_id: str) -> str:
    return f"/threads/{thread_id}/messages/{message_id}/suggestions"


def generate(api: Api, thread_id: str, message_id: str, **body):
    return api.post(v1_path(thread_id, message_id), {"userKey": api.user_key, **body})


def test_it_suggests_showing_each_offered_component_then_telling_more(api, chat):
    thread, answer = chat

    response = generate(api, thread.id, answer.id, availableComponents=[DATA_CARD, BAR_CHART])

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["hasMore"] is False
    assert "nextCursor" not in body
    titles = [s["title"] for s in body["suggestions"]]
    assert titles == ["Show DataCard", "Show BarChart", "Tell me more"]
    card = body["suggestions"][0]
    assert card["id"].startswith("sug_")
    assert card["messageId"] == answer.id
    assert card["description"] == DATA_CARD["description"]
    assert card["detailedSuggestion"] == "Show DataCard"
    assert "metadata" not in card
    assert len({s["id"] for s in body["suggestions"]}) == 3


def test_max_suggestions_bounds_how_many_are_made(api, chat):
    thread, answer = chat

    body = generate(api, thread.id, answer.id, maxSuggestions=1, availableComponents=[DATA_CARD, BAR_CHART]).json()

    assert [s["title"] for s in body["suggestions"]] == ["Show DataCard"]


def test_three_is_the_default_and_no_components_leave_one_suggestion(api, chat):
    thread, answer = chat
    components = [{**DATA_CARD, "name": f"Card{i}"} for i in range(5)]

    assert len(generate(api, thread.id, answer.id, availableComponents=components).json()["suggestions"]) == 3
    only = generate(api, thread.id, answer.id).json()["suggestions"]
    assert [(s["title"], s["detailedSuggestion"]) for s in only] == [("Tell me more", "Tell me more about that.")]


@pytest.mark.both_dbs
def test_generating_again_replaces_the_messages_earlier_suggestions(api, chat):
    thread, answer = chat
    first = generate(api, thread.id, answer.id, availableComponents=[DATA_CARD]).json()["suggestions"]

    second = generate(api, thread.id, answer.id, availableComponents=[BAR_CHART]).json()["suggestions"]
    listed = api.get(v1_path(thread.id, answer.id)).json()

    assert listed == {"suggestions": second, "hasMore": False}
    assert not {s["id"] for s in first} & {s["id"] for s in second}


@pytest.mark.both_dbs
def test_generations_at_the_same_time_leave_one_set(api, chat):
    thread, answer = chat

    def post(_):
        return Api(api.base_url, api.session.headers["x-api-key"]).post(
            v1_path(thread.id, answer.id), {"userKey": "alice", "availableComponents": [DATA_CARD, BAR_CHART]})

    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(post, range(12)))

    assert [r.status_code for r in answers] == [200] * 12
    listed = api.get(v1_path(thread.id, answer.id)).json()["suggestions"]
    assert [s["title"] for s in listed] == ["Show DataCard", "Show BarChart", "Tell me more"]
    assert listed in [r.json()["suggestions"] for r in answers]


@pytest.mark.both_dbs
def test_the_list_pages_in_the_models_order(api, chat):
    thread, answer = chat
    components = [{**DATA_CARD, "name": f"Card{i}"} for i in range(6)]
    made = generate(api, thread.id, answer.id, maxSuggestions=7, availableComponents=components).json()

    first = api.get(v1_path(thread.id, answer.id), limit=3).json()
    second = api.get(v1_path(thread.id, answer.id), limit=3, cursor=first["nextCursor"]).json()
    third = api.get(v1_path(thread.id, answer.id), limit=3, cursor=second["nextCursor"]).json()

    assert first["hasMore"] is True and second["hasMore"] is True and third["hasMore"] is False
    assert "nextCursor" not in third
    assert first["suggestions"] + second["suggestions"] + third["suggestions"] == made["suggestions"]


def test_a_message_without_suggestions_lists_none(api, chat):
    thread, answer = chat

    assert api.get(v1_path(thread.id, answer.id)).json() == {"suggestions": [], "hasMore": False}
    assert api.get(legacy_path(thread.id, answer.id)).json() == []


def test_the_sdks_older_paths_answer_a_bare_list(api, chat):
    thread, answer = chat

    made = api.post(legacy_path(thread.id, answer.id),
                    {"userKey": "alice", "maxSuggestions": 2, "availableComponents": [DATA_CARD]})
    listed = api.get(legacy_path(thread.id, answer.id))

    assert made.status_code == 200, made.text
    assert [s["title"] for s in made.json()] == ["Show DataCard", "Tell me more"]
    assert listed.json() == made.json()
    assert api.get(v1_path(thread.id, answer.id)).json()["suggestions"] == made.json()


def test_the_older_post_takes_the_user_from_the_query_when_the_body_has_none(api, chat):
    thread, answer = chat

    response = api.session.post(api.base_url + legacy_path(thread.id, answer.id), params={"contextKey": "alice"},
                                timeout=30)

    assert response.status_code == 200, response.text
    assert [s["title"] for s in response.json()] == ["Tell me more"]


def test_a_user_message_is_not_found(api, chat):
    thread, answer = chat
    question = thread.messages.get(role="user")

    for path in (v1_path(thread.id, question.id), legacy_path(thread.id, question.id)):
        assert_problem(api.post(path, {"userKey": "alice"}), 404, "MESSAGE_NOT_FOUND")
        assert_problem(api.get(path), 404, "MESSAGE_NOT_FOUND")


def test_a_message_of_another_thread_or_an_unknown_one_is_not_found(api, project, chat):
    thread, answer = chat
    other, _ = conversation(project, ("user", "Hi"))

    assert_problem(generate(api, other.id, answer.id), 404, "MESSAGE_NOT_FOUND")
    assert_problem(generate(api, thread.id, "msg_doesnotexist"), 404, "MESSAGE_NOT_FOUND")


def test_an_unknown_or_foreign_thread_is_not_found(live_server_url, api, other_project_key, chat):
    thread, answer = chat
    bob = Api(live_server_url, api.session.headers["x-api-key"], user_key="bob")
    stranger = Api(live_server_url, other_project_key)

    assert_problem(generate(api, "thr_doesnotexist", answer.id), 404, "THREAD_NOT_FOUND")
    for caller in (bob, stranger):
        assert_problem(generate(caller, thread.id, answer.id), 404, "THREAD_NOT_FOUND")
        assert_problem(caller.get(v1_path(thread.id, answer.id)), 404, "THREAD_NOT_FOUND")
        assert_problem(caller.get(legacy_path(thread.id, answer.id)), 404, "THREAD_NOT_FOUND")


@pytest.mark.parametrize(("body", "field"), [
    ({"maxSuggestions": 0}, "maxSuggestions"),
    ({"maxSuggestions": 11}, "maxSuggestions"),
    ({"maxSuggestions": "3"}, "maxSuggestions"),
    ({"maxSuggestions": 2.5}, "maxSuggestions"),
    ({"maxSuggestions": True}, "maxSuggestions"),
    ({"availableComponents": {"name": "DataCard"}}, "availableComponents"),
    ({"availableComponents": [{"name": "Data Card", "description": "x", "propsSchema": {}}]},
     "availableComponents[0].name"),
    ({"userKey": 7}, "userKey"),
])
def test_it_rejects_bad_bodies_naming_the_field(api, chat, body, field):
    thread, answer = chat

    for path in (v1_path(thread.id, answer.id), legacy_path(thread.id, answer.id)):
        assert_problem(api.post(path, {"userKey": "alice", **body}), 400, "VALIDATION_ERROR", field=field)
    assert api.get(v1_path(thread.id, answer.id)).json()["suggestions"] == []


def test_a_body_that_is_not_an_object_is_rejected(api, chat):
    thread, answer = chat

    assert_problem(api.post(v1_path(thread.id, answer.id), [1, 2]), 400, "VALIDATION_ERROR")
    response = api.session.post(api.base_url + v1_path(thread.id, answer.id), data=b"{nope",
                                headers={"Content-Type": "application/json"}, timeout=30)
    assert_problem(response, 400, "VALIDATION_ERROR")


@pytest.mark.parametrize(("params", "code"), [
    ({"limit": "0"}, "VALIDATION_ERROR"), ({"limit": "101"}, "VALIDATION_ERROR"),
    ({"limit": "two"}, "VALIDATION_ERROR"), ({"cursor": "not-a-cursor"}, "INVALID_CURSOR"),
])
def test_the_list_rejects_bad_paging(api, chat, params, code):
    thread, answer = chat

    assert_problem(api.get(v1_path(thread.id, answer.id), **params), 400, code)


def test_it_needs_a_user_key(api, chat):
    thread, answer = chat

    assert_problem(api.post(v1_path(thread.id, answer.id), {}), 400, "VALIDATION_ERROR", field="userKey")
    assert_problem(api.get(v1_path(thread.id, answer.id), userKey=None), 400, "VALIDATION_ERROR",
                   field="userKey")
    assert_problem(api.get(legacy_path(thread.id, answer.id), userKey=None), 400, "VALIDATION_ERROR",
                   field="userKey")


def test_it_needs_an_api_key(live_server_url, chat):
    thread, answer = chat

    assert_problem(generate(Api(live_server_url, None), thread.id, answer.id), 401, "UNAUTHORIZED")


def test_a_failing_model_is_a_bad_gateway_and_keeps_the_earlier_suggestions(api, project):
    thread, messages = conversation(project, ("user", "Hello"), ("assistant", "Hi!"), ("user", "!fail now"),
                                    ("assistant", "Oops."))
    answer = messages[3]
    # The !fail rule reads the conversation up to the message, so the first answer still works.
    kept = generate(api, thread.id, messages[1].id).json()["suggestions"]

    body = assert_problem(generate(api, thread.id, answer.id), 502, "LLM_SERVER_ERROR")

    assert body["isRetryable"] is True
    assert api.get(v1_path(thread.id, messages[1].id)).json()["suggestions"] == kept
    assert api.get(v1_path(thread.id, answer.id)).json()["suggestions"] == []
