"""GET /v1/threads/{threadId}/messages and /messages/{messageId}."""
import pytest
from django.utils import timezone

from tests.support.problems import assert_problem
from threads import services
from threads.models import Message

pytestmark = pytest.mark.django_db(transaction=True)


def _thread_with_messages(project, count: int, user_key: str = "alice"):
    thread = services.thread_create(project=project, user_key=user_key)
    ids = [services.message_create(thread=thread, role="user", content=[{"type": "text", "text": f"m{i}"}]).id
           for i in range(count)]
    return thread, ids


def _all_pages(api, path: str, **params) -> list[dict]:
    pages, cursor = [], None
    while True:
        response = api.get(path, cursor=cursor, **params)
        assert response.status_code == 200, response.text
        pages.append(response.json())
        if not pages[-1]["hasMore"]:
            return pages
        cursor = pages[-1]["nextCursor"]
        assert len(pages) < 100, "pagination does not end"


def test_it_lists_messages_oldest_first_by_default(api, project):
    thread, ids = _thread_with_messages(project, 3)

    page = api.get(f"/v1/threads/{thread.id}/messages").json()

    assert set(page) == {"messages", "hasMore"}
    assert [m["id"] for m in page["messages"]] == ids
    assert page["messages"][0]["content"] == [{"type": "text", "text": "m0"}]
    assert set(page["messages"][0]) == {"id", "role", "content", "createdAt"}


def test_it_lists_messages_newest_first_on_request(api, project):
    thread, ids = _thread_with_messages(project, 3)

    page = api.get(f"/v1/threads/{thread.id}/messages", order="desc").json()

    assert [m["id"] for m in page["messages"]] == list(reversed(ids))


def test_it_pages_with_a_default_limit_of_50(api, project):
    thread, ids = _thread_with_messages(project, 51)

    page = api.get(f"/v1/threads/{thread.id}/messages").json()

    assert [m["id"] for m in page["messages"]] == ids[:50]
    assert page["hasMore"] is True


@pytest.mark.both_dbs
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_pages_never_skip_or_repeat_messages_with_equal_timestamps(api, project, order):
    thread, ids = _thread_with_messages(project, 23)
    Message.objects.filter(id__in=ids).update(created_at=timezone.now())

    pages = _all_pages(api, f"/v1/threads/{thread.id}/messages", limit=5, order=order)

    seen = [m["id"] for page in pages for m in page["messages"]]
    assert len(seen) == len(set(seen)) == 23
    assert set(seen) == set(ids)
    # With equal timestamps the order is by id, reversed for desc.
    assert seen == sorted(ids, reverse=order == "desc")
    assert [len(page["messages"]) for page in pages] == [5, 5, 5, 5, 3]
    assert all(page["nextCursor"] and page["hasMore"] for page in pages[:-1])
    assert "nextCursor" not in pages[-1] and pages[-1]["hasMore"] is False


@pytest.mark.both_dbs
def test_a_cursor_continues_after_its_message_in_time_order(api, project):
    thread, ids = _thread_with_messages(project, 6)

    first = api.get(f"/v1/threads/{thread.id}/messages", limit=2, order="desc").json()
    rest = api.get(f"/v1/threads/{thread.id}/messages", limit=10, order="desc", cursor=first["nextCursor"]).json()

    assert [m["id"] for m in first["messages"] + rest["messages"]] == list(reversed(ids))


@pytest.mark.parametrize(("params", "field"), [
    ({"limit": "0"}, "limit"), ({"limit": "101"}, "limit"), ({"limit": "ten"}, "limit"),
    ({"order": "up"}, "order"), ({"order": "ASC"}, "order"), ({"userKey": None}, "userKey"),
])
def test_it_rejects_bad_parameters_naming_them(api, project, params, field):
    thread, _ = _thread_with_messages(project, 1)

    assert_problem(api.get(f"/v1/threads/{thread.id}/messages", **params), 400, "VALIDATION_ERROR", field=field)


def test_it_rejects_a_bad_cursor(api, project):
    thread, _ = _thread_with_messages(project, 1)

    assert_problem(api.get(f"/v1/threads/{thread.id}/messages", cursor="garbage"), 400, "INVALID_CURSOR")


def test_it_hides_another_users_messages(api, project):
    thread, ids = _thread_with_messages(project, 1, user_key="bob")

    assert_problem(api.get(f"/v1/threads/{thread.id}/messages"), 404, "THREAD_NOT_FOUND")
    assert_problem(api.get(f"/v1/threads/{thread.id}/messages/{ids[0]}"), 404, "THREAD_NOT_FOUND")


def test_it_returns_one_message(api, project):
    thread, ids = _thread_with_messages(project, 2)
    Message.objects.filter(id=ids[1]).update(metadata={"lang": "pt"})

    response = api.get(f"/v1/threads/{thread.id}/messages/{ids[1]}")

    assert response.status_code == 200, response.text
    message = response.json()
    assert set(message) == {"id", "role", "content", "createdAt", "metadata"}
    assert message["id"] == ids[1]
    assert message["role"] == "user"
    assert message["content"] == [{"type": "text", "text": "m1"}]
    assert message["metadata"] == {"lang": "pt"}


def test_it_answers_message_not_found_for_an_unknown_message(api, project):
    thread, _ = _thread_with_messages(project, 1)

    assert_problem(api.get(f"/v1/threads/{thread.id}/messages/msg_nope"), 404, "MESSAGE_NOT_FOUND")


def test_it_does_not_find_a_message_through_another_thread(api, project):
    thread, _ = _thread_with_messages(project, 1)
    _, other_ids = _thread_with_messages(project, 1)

    assert_problem(api.get(f"/v1/threads/{thread.id}/messages/{other_ids[0]}"), 404, "MESSAGE_NOT_FOUND")


def test_it_rejects_a_missing_user_key_for_one_message(api, project):
    thread, ids = _thread_with_messages(project, 1)

    assert_problem(api.get(f"/v1/threads/{thread.id}/messages/{ids[0]}", userKey=None), 400, "VALIDATION_ERROR",
                   field="userKey")
