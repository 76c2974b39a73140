"""POST /v1/threads."""
from datetime import datetime, timedelta

import pytest

from projects.config import ProjectSettings, project_settings_save
from tests.support.problems import assert_problem

pytestmark = pytest.mark.django_db(transaction=True)


def _utc(value: str) -> datetime:
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert parsed.utcoffset() == timedelta(0), value
    return parsed


def test_it_creates_a_thread_with_only_the_fields_it_has(api):
    response = api.post("/v1/threads", {"userKey": "alice"})

    assert response.status_code == 201, response.text
    assert response.headers["Content-Type"].startswith("application/json")
    thread = response.json()
    # Absent values are omitted, not null (docs/protocol.md#endpoints).
    assert set(thread) == {"id", "userKey", "runStatus", "createdAt", "updatedAt"}
    assert thread["id"].startswith("thr_")
    assert thread["userKey"] == "alice"
    assert thread["runStatus"] == "idle"
    _utc(thread["createdAt"])
    _utc(thread["updatedAt"])


def test_it_stores_metadata(api):
    response = api.post("/v1/threads", {"userKey": "alice", "metadata": {"topic": "billing", "n": [1, 2]}})

    assert response.status_code == 201, response.text
    assert response.json()["metadata"] == {"topic": "billing", "n": [1, 2]}
    fetched = api.get(f"/v1/threads/{response.json()['id']}").json()
    assert fetched["metadata"] == {"topic": "billing", "n": [1, 2]}


def test_it_stores_initial_messages_in_order(api, project):
    # A system message needs allowSystemPromptOverride (tests/runs/test_initial_message_roles.py).
    project_settings_save(project, ProjectSettings(allow_system_prompt_override=True))
    response = api.post("/v1/threads", {"userKey": "alice", "initialMessages": [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "text", "text": "Hello"}], "metadata": {"source": "import"}},
        {"role": "assistant", "content": [{"type": "resource",
                                           "resource": {"uri": "file:///a.txt", "mimeType": "text/plain"}}]},
    ]})
    assert response.status_code == 201, response.text

    messages = api.get(f"/v1/threads/{response.json()['id']}").json()["messages"]

    assert [m["role"] for m in messages] == ["system", "user", "assistant"]
    assert messages[0]["content"] == [{"type": "text", "text": "Be brief."}]
    assert messages[1]["metadata"] == {"source": "import"}
    assert "metadata" not in messages[0]
    assert messages[2]["content"] == [{"type": "resource",
                                       "resource": {"uri": "file:///a.txt", "mimeType": "text/plain"}}]
    assert all(m["id"].startswith("msg_") for m in messages)


def test_it_trims_the_user_key(api):
    response = api.post("/v1/threads", {"userKey": "  alice  "})

    assert response.status_code == 201, response.text
    assert response.json()["userKey"] == "alice"
    assert api.get(f"/v1/threads/{response.json()['id']}").status_code == 200


@pytest.mark.parametrize("body", [{}, {"userKey": ""}, {"userKey": "   "}, {"userKey": None}])
def test_it_rejects_missing_or_blank_user_key(api, body):
    assert_problem(api.post("/v1/threads", body), 400, "VALIDATION_ERROR", field="userKey")


def test_it_rejects_an_over_long_user_key(api):
    assert_problem(api.post("/v1/threads", {"userKey": "u" * 257}), 400, "VALIDATION_ERROR", field="userKey")


@pytest.mark.parametrize(("body", "field"), [
    ({"userKey": 5}, "userKey"),
    ({"userKey": "alice", "metadata": "x"}, "metadata"),
    ({"userKey": "alice", "metadata": [1]}, "metadata"),
    ({"userKey": "alice", "initialMessages": {"role": "user"}}, "initialMessages"),
    ({"userKey": "alice", "initialMessages": [{"role": "tool", "content": [{"type": "text", "text": "x"}]}]},
     "initialMessages[0].role"),
    ({"userKey": "alice", "initialMessages": [{"role": "user", "content": []}]}, "initialMessages[0].content"),
    ({"userKey": "alice", "initialMessages": [{"role": "user", "content": [{"type": "text", "text": 3}]}]},
     "initialMessages[0].content[0].text"),
])
def test_it_rejects_wrong_types_naming_the_field(api, body, field):
    problem = assert_problem(api.post("/v1/threads", body), 400, "VALIDATION_ERROR", field=field)
    assert field in problem["detail"]


def test_a_rejected_thread_is_not_created(api):
    api.post("/v1/threads", {"userKey": "alice", "metadata": "x"})

    assert api.get("/v1/threads").json()["threads"] == []


def test_it_rejects_a_body_that_is_not_an_object(api):
    assert_problem(api.post("/v1/threads", ["userKey", "alice"]), 400, "VALIDATION_ERROR", field="body")
