"""GET /v1/threads/{threadId}."""
import pytest

from projects.models import Project
from runs.lock import lock_held
from tests.support.problems import assert_problem
from threads import services
from threads.models import Message

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_returns_the_thread_with_its_messages_oldest_first(api, project):
    thread = services.thread_create(project=project, user_key="alice", metadata={"k": "v"})
    first = services.message_create(thread=thread, role="user", content=[{"type": "text", "text": "one"}])
    second = services.message_create(thread=thread, role="assistant", content=[{"type": "text", "text": "two"}],
                                     parent_message_id=first.id)

    body = api.get(f"/v1/threads/{thread.id}").json()

    assert set(body) == {"id", "userKey", "runStatus", "metadata", "createdAt", "updatedAt", "messages"}
    assert body["id"] == thread.id and body["metadata"] == {"k": "v"}
    assert [m["id"] for m in body["messages"]] == [first.id, second.id]
    assert set(body["messages"][0]) == {"id", "role", "content", "createdAt"}
    assert body["messages"][1]["parentMessageId"] == first.id


def test_it_shows_a_stored_tool_result_as_an_assistant_message(api, project):
    thread = services.thread_create(project=project, user_key="alice")
    block = {"type": "tool_result", "toolUseId": "call_1", "content": [{"type": "text", "text": "42"}]}
    services.message_create(thread=thread, role=Message.Role.TOOL, content=[block], tool_call_id="call_1")

    [message] = api.get(f"/v1/threads/{thread.id}").json()["messages"]

    assert message["role"] == "assistant"
    assert message["content"] == [block]


def test_it_marks_only_cancelled_messages_as_cancelled(api, project):
    thread = services.thread_create(project=project, user_key="alice")
    services.message_create(thread=thread, role="assistant", content=[{"type": "text", "text": "done"}])
    services.message_create(thread=thread, role="assistant", content=[{"type": "text", "text": "cut"}],
                            is_cancelled=True)

    done, cut = api.get(f"/v1/threads/{thread.id}").json()["messages"]

    assert "isCancelled" not in done
    assert cut["isCancelled"] is True


def test_it_shows_the_active_run(api, project):
    thread = services.thread_create(project=project, user_key="alice")
    with lock_held(thread_id=thread.id, run_id="run_active"):
        pass

    body = api.get(f"/v1/threads/{thread.id}").json()

    assert body["runStatus"] == "waiting"
    assert body["currentRunId"] == "run_active"


def test_it_hides_another_users_thread(api, project):
    thread = services.thread_create(project=project, user_key="bob")

    problem = assert_problem(api.get(f"/v1/threads/{thread.id}"), 404, "THREAD_NOT_FOUND")
    unknown = assert_problem(api.get("/v1/threads/thr_doesnotexist"), 404, "THREAD_NOT_FOUND")

    # The same answer as for an id that does not exist: nothing tells the two apart.
    assert problem["detail"] == f"Thread {thread.id} was not found."
    assert unknown["detail"] == "Thread thr_doesnotexist was not found."
    assert set(problem) == set(unknown)


def test_it_hides_another_projects_thread_with_the_same_user_key(api, other_project_key):
    thread = services.thread_create(project=Project.objects.get(name="other-project"), user_key="alice")

    assert_problem(api.get(f"/v1/threads/{thread.id}"), 404, "THREAD_NOT_FOUND")


def test_the_other_project_sees_its_own_thread(api, live_server_url, other_project_key):
    from tests.conftest import Api

    thread = services.thread_create(project=Project.objects.get(name="other-project"), user_key="alice")

    assert Api(live_server_url, other_project_key).get(f"/v1/threads/{thread.id}").status_code == 200


def test_it_rejects_a_missing_user_key(api, project):
    thread = services.thread_create(project=project, user_key="alice")

    assert_problem(api.get(f"/v1/threads/{thread.id}", userKey=None), 400, "VALIDATION_ERROR", field="userKey")
