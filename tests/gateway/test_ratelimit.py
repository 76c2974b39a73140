"""The gateway's per-key request rate: one-minute windows counted in the limits' table
(projects/limits.py `requests_admit`), so every server process shares one count with nothing but the
database (no shared cache to configure)."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest
from django.db import connections

from projects.limit_models import LimitCounter
from projects.limits import REQUESTS, requests_admit
from tests.gateway.wire import openai_client
from tests.projects.test_limits import fresh_minute
from tests.support.live import LiveServer

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_allows_the_limit_then_says_how_long_to_wait(project):
    fresh_minute()
    answers = [requests_admit(project=project, bucket="key:unit-a", limit=2) for _ in range(3)]

    assert answers[:2] == [None, None]
    assert 1 <= answers[2] <= 60
    assert LimitCounter.objects.get(project=project, user_key="key:unit-a", kind=REQUESTS).count == 2


@pytest.mark.both_dbs
def test_a_limit_of_zero_turns_it_off_and_writes_nothing(project):
    assert [requests_admit(project=project, bucket="key:unit-c", limit=0) for _ in range(5)] == [None] * 5
    assert not LimitCounter.objects.filter(kind=REQUESTS).exists()


def test_of_twenty_concurrent_requests_exactly_the_limit_get_in(project):
    # Not both_dbs: concurrent writers are what PostgreSQL must get right (SQLite's writes are serial).
    fresh_minute()

    def one(_):
        try:
            return requests_admit(project=project, bucket="key:burst", limit=5)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(one, range(20)))

    assert answers.count(None) == 5


def test_two_processes_share_the_count_with_no_shared_cache(django_db_setup, project):
    from projects.models import ApiKey

    env = {"GATEWAY_RATE_LIMIT_PER_MINUTE": "2"}  # no CACHE_URL: each process has its own local cache
    servers = [LiveServer("gateway-shared-a", env), LiveServer("gateway-shared-b", env)]
    try:
        # One key per attempt: a minute boundary among the calls restarts the count, so retry once then.
        for _ in range(2):
            window = int(time.time() // 60)
            key = ApiKey.generate(project, "shared")[1]
            a, b = (openai_client(server.url, key) for server in servers)
            outcomes = []
            for client in (a, b, a):
                try:
                    outcomes.append(client.chat.completions.create(
                        model="offline", messages=[{"role": "user", "content": "hi"}]).choices[0].finish_reason)
                except openai.RateLimitError as exc:
                    outcomes.append(exc.status_code)
            if int(time.time() // 60) == window:
                break
        assert outcomes == ["stop", "stop", 429]
    finally:
        for server in servers:
            server.stop()
