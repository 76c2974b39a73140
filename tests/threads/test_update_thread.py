"""PATCH /v1/threads/{threadId}."""
from datetime import datetime

import pytest

from tests.support.problems import assert_problem
from threads import services

pytestmark = pytest.mark.django_db(transaction=True)


def _when(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_it_renames_a_thread(api, project):
    thread = services.thread_create(project=project, user_key="alice", metadata={"keep": True})

    response = api.patch(f"/v1/threads/{thread.id}", {"name": "Trip to Lisbon"})

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["name"] == "Trip to Lisbon"
    assert body["metadata"] == {"keep": True}  # not sent, not changed
    assert "messages" not in body
    assert _when(body["updatedAt"]) >= _when(body["createdAt"])
    assert api.get(f"/v1/threads/{thread.id}").json()["name"] == "Trip to Lisbon"


def test_it_replaces_the_metadata(api, project):
    thread = services.thread_create(project=project, user_key="alice", metadata={"old": 1})
    services.thread_update(thread=thread, name="Named")

    body = api.patch(f"/v1/threads/{thread.id}", {"metadata": {"new": 2}}).json()

    assert body["metadata"] == {"new": 2}
    assert body["name"] == "Named"


def test_it_moves_updated_at_forward(api, project):
    thread = services.thread_create(project=project, user_key="alice")
    before = _when(api.get(f"/v1/threads/{thread.id}").json()["updatedAt"])

    after = _when(api.patch(f"/v1/threads/{thread.id}", {"name": "x"}).json()["updatedAt"])

    assert after > before


@pytest.mark.parametrize(("body", "field"), [
    ({"name": 5}, "name"),
    ({"name": "n" * 501}, "name"),
    ({"metadata": "x"}, "metadata"),
    ({"metadata": [1, 2]}, "metadata"),
])
def test_it_rejects_wrong_types_naming_the_field(api, project, body, field):
    thread = services.thread_create(project=project, user_key="alice")

    assert_problem(api.patch(f"/v1/threads/{thread.id}", body), 400, "VALIDATION_ERROR", field=field)
    assert "name" not in api.get(f"/v1/threads/{thread.id}").json()


def test_it_hides_another_users_thread(api, project):
    thread = services.thread_create(project=project, user_key="bob")

    assert_problem(api.patch(f"/v1/threads/{thread.id}", {"name": "mine now"}), 404, "THREAD_NOT_FOUND")
    thread.refresh_from_db()
    assert thread.name is None


def test_it_rejects_a_missing_user_key(api, project):
    thread = services.thread_create(project=project, user_key="alice")

    assert_problem(api.patch(f"/v1/threads/{thread.id}", {"name": "x"}, userKey=None), 400, "VALIDATION_ERROR",
                   field="userKey")
