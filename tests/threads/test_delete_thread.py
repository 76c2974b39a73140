"""DELETE /v1/threads/{threadId}."""
from datetime import timedelta

import pytest
from django.utils import timezone

from runs.lock import lock_held
from tests.support.problems import assert_problem
from threads import services
from threads.models import Thread

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_deletes_a_thread_and_its_messages(api, project):
    thread = services.thread_create(project=project, user_key="alice")
    message = services.message_create(thread=thread, role="user", content=[{"type": "text", "text": "hi"}])

    response = api.delete(f"/v1/threads/{thread.id}")

    assert response.status_code == 204, response.text
    assert response.content == b""
    assert_problem(api.get(f"/v1/threads/{thread.id}"), 404, "THREAD_NOT_FOUND")
    assert_problem(api.get(f"/v1/threads/{thread.id}/messages/{message.id}"), 404, "THREAD_NOT_FOUND")
    assert api.get("/v1/threads").json()["threads"] == []


def test_it_refuses_while_a_run_holds_the_lock(api, project):
    thread = services.thread_create(project=project, user_key="alice")
    with lock_held(thread_id=thread.id, run_id="run_live"):
        pass

    assert_problem(api.delete(f"/v1/threads/{thread.id}"), 409, "RUN_ACTIVE", currentRunId="run_live")
    assert api.get(f"/v1/threads/{thread.id}").status_code == 200


def test_it_deletes_when_the_runs_lease_has_expired(api, project):
    thread = services.thread_create(project=project, user_key="alice")
    with lock_held(thread_id=thread.id, run_id="run_dead"):
        pass
    Thread.objects.filter(id=thread.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))

    assert api.delete(f"/v1/threads/{thread.id}").status_code == 204


def test_it_hides_another_users_thread(api, project):
    thread = services.thread_create(project=project, user_key="bob")

    assert_problem(api.delete(f"/v1/threads/{thread.id}"), 404, "THREAD_NOT_FOUND")
    assert Thread.objects.filter(id=thread.id).exists()


def test_it_answers_404_for_a_deleted_thread(api, project):
    thread = services.thread_create(project=project, user_key="alice")
    api.delete(f"/v1/threads/{thread.id}")

    assert_problem(api.delete(f"/v1/threads/{thread.id}"), 404, "THREAD_NOT_FOUND")


def test_it_rejects_a_missing_user_key(api, project):
    thread = services.thread_create(project=project, user_key="alice")

    assert_problem(api.delete(f"/v1/threads/{thread.id}", userKey=None), 400, "VALIDATION_ERROR", field="userKey")
    assert Thread.objects.filter(id=thread.id).exists()
