"""Input that the database cannot store, and rows that vanish, answer 4xx problems, never 500."""
import pytest

from runs.lock import lock_held
from core.problems import Problem
from threads.models import Thread

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_refuses_nul_characters_in_a_thread_body(api):
    response = api.post("/v1/threads", {"userKey": "alice", "metadata": {"note": "a\u0000b"}})
    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert "NUL" in response.json()["detail"]


def test_it_refuses_nul_characters_in_a_run_message_and_stores_nothing(api):
    response = api.post("/v1/threads/runs", {"userKey": "alice", "message": {
        "role": "user", "content": [{"type": "text", "text": "hi\u0000"}]}})
    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert api.get("/v1/threads").json()["threads"] == []


@pytest.mark.both_dbs
def test_taking_the_lock_of_a_thread_deleted_meanwhile_is_a_404(project):
    thread = Thread.objects.create(project=project, user_key="alice")
    Thread.objects.filter(pk=thread.pk).delete()
    with pytest.raises(Problem) as caught:
        with lock_held(thread_id=thread.pk, run_id="run_x"):
            pass
    assert caught.value.status == 404 and caught.value.code == "THREAD_NOT_FOUND"
