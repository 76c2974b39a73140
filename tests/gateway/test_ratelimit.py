"""The gateway's per-key rate limit: fixed one-minute windows counted in Django's cache."""
from __future__ import annotations

import asyncio
import tempfile
import time

import openai
import pytest

from gateway.ratelimit import rate_limit_hit
from tests.gateway.wire import openai_client
from tests.support.live import LiveServer


def _hits(bucket: str, limit: int, moments: list[float]) -> list[int | None]:
    async def run():
        return [await rate_limit_hit(bucket=bucket, limit=limit, now=moment) for moment in moments]

    return asyncio.run(run())


def test_it_allows_the_limit_then_says_how_long_to_wait():
    start = 6_000_000 * 60 + 15.5  # 15.5 s into a minute

    assert _hits("unit-a", 2, [start, start + 1, start + 2]) == [None, None, 43]


def test_the_count_starts_again_in_the_next_minute():
    start = 6_000_001 * 60 + 50

    assert _hits("unit-b", 1, [start, start + 5, start + 11]) == [None, 5, None]


def test_a_limit_of_zero_turns_it_off():
    start = 6_000_002 * 60

    assert _hits("unit-c", 0, [start] * 5) == [None] * 5


@pytest.mark.django_db(transaction=True)
def test_processes_sharing_a_cache_share_the_count(django_db_setup, project):
    from projects.models import ApiKey

    with tempfile.TemporaryDirectory() as cache_dir:
        env = {"GATEWAY_RATE_LIMIT_PER_MINUTE": "2", "CACHE_URL": f"filecache://{cache_dir}"}
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
