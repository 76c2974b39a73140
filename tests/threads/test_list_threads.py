"""GET /v1/threads."""
import base64
import json

import pytest
from django.utils import timezone

from projects.models import Project
from tests.support.problems import assert_problem
from threads import services
from threads.models import Thread

pytestmark = pytest.mark.django_db(transaction=True)


def _pages(api, path: str, **params) -> list[dict]:
    """Follows nextCursor to the end; returns every page's body."""
    pages = []
    cursor = None
    while True:
        response = api.get(path, cursor=cursor, **params)
        assert response.status_code == 200, response.text
        page = response.json()
        pages.append(page)
        if not page["hasMore"]:
            return pages
        cursor = page["nextCursor"]
        assert len(pages) < 100, "pagination does not end"


def test_it_lists_the_users_threads_newest_first(api, project):
    first = services.thread_create(project=project, user_key="alice", metadata={"n": 1})
    second = services.thread_create(project=project, user_key="alice")

    page = api.get("/v1/threads").json()

    assert set(page) == {"threads", "hasMore"}  # no nextCursor on the last page
    assert page["hasMore"] is False
    assert [t["id"] for t in page["threads"]] == [second.id, first.id]
    assert page["threads"][1]["metadata"] == {"n": 1}
    assert set(page["threads"][0]) == {"id", "userKey", "runStatus", "createdAt", "updatedAt"}


def test_it_answers_an_empty_page_for_a_new_user(api):
    assert api.get("/v1/threads").json() == {"threads": [], "hasMore": False}


def test_it_lists_only_the_callers_own_threads(api, project, other_project_key):
    mine = services.thread_create(project=project, user_key="alice")
    services.thread_create(project=project, user_key="bob")
    services.thread_create(project=Project.objects.get(name="other-project"), user_key="alice")

    page = api.get("/v1/threads").json()

    assert [t["id"] for t in page["threads"]] == [mine.id]


def test_it_pages_with_a_default_limit_of_20(api, project):
    for _ in range(21):
        services.thread_create(project=project, user_key="alice")

    page = api.get("/v1/threads").json()

    assert len(page["threads"]) == 20
    assert page["hasMore"] is True
    assert page["nextCursor"]


@pytest.mark.both_dbs
@pytest.mark.parametrize("limit", [1, 7, 25])
def test_pages_never_skip_or_repeat_threads_with_equal_timestamps(api, project, limit):
    created = [services.thread_create(project=project, user_key="alice").id for _ in range(25)]
    # The hard case for keyset pagination: every row has the same created_at.
    Thread.objects.filter(id__in=created).update(created_at=timezone.now())

    pages = _pages(api, "/v1/threads", limit=limit)

    seen = [t["id"] for page in pages for t in page["threads"]]
    assert len(seen) == len(set(seen)) == 25
    assert set(seen) == set(created)
    assert all(len(page["threads"]) == limit and page["nextCursor"] for page in pages[:-1])
    assert "nextCursor" not in pages[-1] and pages[-1]["hasMore"] is False


@pytest.mark.both_dbs
def test_a_page_started_before_new_threads_arrive_does_not_repeat(api, project):
    old = [services.thread_create(project=project, user_key="alice").id for _ in range(6)]
    first = api.get("/v1/threads", limit=3).json()
    services.thread_create(project=project, user_key="alice")

    rest = api.get("/v1/threads", limit=10, cursor=first["nextCursor"]).json()

    seen = [t["id"] for t in first["threads"] + rest["threads"]]
    assert seen == list(reversed(old))


@pytest.mark.parametrize("limit", ["0", "101", "-1", "abc", "2.5"])
def test_it_rejects_a_limit_out_of_range(api, limit):
    assert_problem(api.get("/v1/threads", limit=limit), 400, "VALIDATION_ERROR", field="limit")


@pytest.mark.parametrize("limit", ["1", "100"])
def test_it_accepts_the_limits_bounds(api, limit):
    assert api.get("/v1/threads", limit=limit).status_code == 200


@pytest.mark.parametrize("cursor", [
    "not-a-cursor",
    "!!!",
    base64.urlsafe_b64encode(b'{"a": 1}').decode(),
    base64.urlsafe_b64encode(json.dumps(["2024-01-01T00:00:00", "thr_x"]).encode()).decode(),  # no timezone
    base64.urlsafe_b64encode(json.dumps(["yesterday", "thr_x"]).encode()).decode(),
    base64.urlsafe_b64encode(json.dumps(["2024-01-01T00:00:00+00:00", 7]).encode()).decode(),
])
def test_it_rejects_a_bad_cursor(api, cursor):
    assert_problem(api.get("/v1/threads", cursor=cursor), 400, "INVALID_CURSOR")


def test_it_rejects_a_missing_user_key(api):
    assert_problem(api.get("/v1/threads", userKey=None), 400, "VALIDATION_ERROR", field="userKey")


def test_it_rejects_a_blank_user_key(api):
    assert_problem(api.get("/v1/threads", userKey="  "), 400, "VALIDATION_ERROR", field="userKey")
