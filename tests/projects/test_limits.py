"""Run rates and token budgets across server processes (docs/abuse-and-limits.md, projects/limits.py).

Two uvicorn processes share one database and nothing else; requests alternate between them. The counts
are of requests let in and refused, never of time. A minute window must not end in the middle of a test,
so a test that counts against a run rate starts at the beginning of one (`fresh_minute`).
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator

import pydantic
import pytest
import requests
from django.db import connection

from projects.config import Limits, ProjectSettings, project_settings_save
from projects.limit_models import LimitCounter
from tests.support.live import LiveServer
from tests.support.problems import assert_problem
from tests.support.sse import read_events, types

pytestmark = pytest.mark.django_db(transaction=True)

RACERS = 1000


@pytest.fixture(scope="module")
def second_server(django_db_setup, django_db_blocker) -> Iterator[LiveServer]:
    server = LiveServer("limits-second")
    yield server
    server.stop()


@pytest.fixture
def servers(live_server_url, second_server) -> list[str]:
    return [live_server_url, second_server.url]


def limit(project, **values: int) -> None:
    project_settings_save(project, ProjectSettings(limits=Limits(**values)))


def fresh_minute(room: float = 10.0) -> None:
    """Waits, when needed, until the database's minute has at least `room` seconds left.

    The bodies of the tests that call it took 0.1-0.5 s on a quiet machine: 10 s is twenty times that, and
    waits 0.8 s on average (room 40 s waited 13 s on average, about two minutes of every suite run)."""
    if connection.vendor != "postgresql":
        second = time.time() % 60
    else:
        with connection.cursor() as cursor:
            cursor.execute("SELECT EXTRACT(SECOND FROM now())")
            second = float(cursor.fetchone()[0])
    if 60 - second < room:
        time.sleep(60 - second + 0.5)


def start_run(base_url: str, api_key: str, user: str = "alice") -> requests.Response:
    response = requests.post(base_url + "/v1/threads/runs", stream=True, timeout=60, headers={"x-api-key": api_key},
                             json={"userKey": user, "message": {"role": "user",
                                                                "content": [{"type": "text", "text": "hi"}]}})
    if response.status_code == 200:
        assert types(read_events(response))[-1] == "RUN_FINISHED"
    return response


def assert_refused(response: requests.Response, code: str, most: int) -> None:
    assert_problem(response, 429, code)
    assert 1 <= int(response.headers["Retry-After"]) <= most
    assert response.json()["retryAfter"] == int(response.headers["Retry-After"])


@pytest.mark.both_dbs
def test_the_user_run_rate_holds_across_two_processes(servers, api_key, project):
    limit(project, runs_per_minute_per_user=3)
    fresh_minute()

    answers = [start_run(servers[i % 2], api_key) for i in range(5)]
    other_user = start_run(servers[1], api_key, user="bob")

    assert [a.status_code for a in answers] == [200, 200, 200, 429, 429]
    for refused in answers[3:]:
        assert_refused(refused, "RATE_LIMITED", 60)
    assert other_user.status_code == 200


def test_the_project_run_rate_counts_every_user(servers, api_key, project):
    limit(project, runs_per_minute=2)
    fresh_minute()

    answers = [start_run(servers[i % 2], api_key, user=f"user-{i}") for i in range(4)]

    assert [a.status_code for a in answers] == [200, 200, 429, 429]


def test_of_a_thousand_concurrent_runs_exactly_the_limit_start(servers, api_key, project):
    limit(project, runs_per_minute_per_user=37)
    fresh_minute()

    with ThreadPoolExecutor(max_workers=64) as pool:
        statuses = list(pool.map(lambda i: start_run(servers[i % 2], api_key).status_code, range(RACERS)))

    # Counted per minute window of the database's clock: on a loaded machine the race can outlast the
    # minute it started in, and the next window lets in its own 37.
    windows = list(LimitCounter.objects.filter(kind="runs", user_key="alice").order_by("window_start")
                   .values_list("count", flat=True))
    assert windows and all(count <= 37 for count in windows) and windows[0] == 37
    assert statuses.count(200) == sum(windows)
    assert statuses.count(429) == RACERS - sum(windows)


@pytest.mark.parametrize("limits", [{"runsPerMinute": -1}, {"tokensPerDay": 1.5}, {"runsPerMinutePerUser": "5"},
                                    {"tokensPerDayPerUser": True}, {"runsPerMinute": None}])
def test_limits_that_are_negative_or_not_integers_are_refused(limits):
    with pytest.raises(pydantic.ValidationError, match="limits"):
        ProjectSettings.model_validate({"limits": limits})


def test_a_limit_of_zero_is_no_limit(live_server_url, api_key, project):
    limit(project, runs_per_minute_per_user=0, runs_per_minute=0, tokens_per_day=0, tokens_per_day_per_user=0)

    assert [start_run(live_server_url, api_key).status_code for _ in range(3)] == [200, 200, 200]


def test_generate_name_and_the_gateway_count_against_the_project_rate(live_server_url, api_key, project):
    limit(project, runs_per_minute=2)
    fresh_minute()
    started = start_run(live_server_url, api_key)
    thread_id = started.headers["X-Thread-Id"]

    named = requests.post(f"{live_server_url}/threads/{thread_id}/generate-name", params={"userKey": "alice"},
                          headers={"x-api-key": api_key}, timeout=30)
    refused_name = requests.post(f"{live_server_url}/threads/{thread_id}/generate-name",
                                 params={"userKey": "alice"}, headers={"x-api-key": api_key}, timeout=30)
    gateway = requests.post(live_server_url + "/api/chat/completions", timeout=30,
                            headers={"Authorization": f"Bearer {api_key}"},
                            json={"messages": [{"role": "user", "content": "hi"}]})

    assert named.status_code == 200, named.text
    assert_refused(refused_name, "RATE_LIMITED", 60)
    assert gateway.status_code == 429
    assert gateway.json()["error"]["code"] == "rate_limited"
    assert 1 <= int(gateway.headers["Retry-After"]) <= 60


@pytest.mark.both_dbs
def test_old_counters_are_pruned_in_one_statement(project, settings, django_assert_num_queries):
    from datetime import timedelta

    from django.utils import timezone

    from projects.limit_models import LimitCounter
    from projects.limits import counters_prune

    now = timezone.now()
    rows = {"runs-now": ("runs", now), "runs-2-days": ("runs", now - timedelta(days=2)),
            "tokens-2-days": ("tokens", now - timedelta(days=2)), "tokens-91-days": ("tokens", now - timedelta(days=91))}
    for name, (kind, start) in rows.items():
        LimitCounter.objects.create(project=project, user_key=name, kind=kind, window_start=start, count=1)

    with django_assert_num_queries(1):
        counters_prune(older_than_days=90)

    assert sorted(LimitCounter.objects.values_list("user_key", flat=True)) == ["runs-now", "tokens-2-days"]
