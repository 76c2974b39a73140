"""Per-key request rate limit for the gateway: a fixed one-minute window counted in Django's cache.

The counter lives in the configured cache (CACHE_URL), so several server processes share one limit
when that cache is shared (Redis, Memcached, the database cache); with the default local-memory
cache each process counts on its own.
"""
from __future__ import annotations

import math
import time

from django.core.cache import cache

WINDOW_SECONDS = 60


async def rate_limit_hit(*, bucket: str, limit: int, now: float | None = None) -> int | None:
    """Count one request for `bucket`; return the seconds to wait when it is over `limit`, else None.

    A `limit` of 0 or less turns the limit off. `add` then `incr` is atomic on Redis and Memcached,
    so concurrent requests from several processes never lose a count there; the database and file
    caches increment by read-then-write and may undercount requests that arrive at the same moment.
    """
    if limit <= 0:
        return None
    now = time.time() if now is None else now
    window = int(now // WINDOW_SECONDS)
    key = f"gateway:ratelimit:{bucket}:{window}"
    # The key outlives its window a little, so a slow clock elsewhere cannot restart a count.
    await cache.aadd(key, 0, timeout=WINDOW_SECONDS * 2)
    try:
        count = await cache.aincr(key)
    except ValueError:
        # Evicted between add and incr (a full cache): start the count again rather than fail.
        await cache.aset(key, 1, timeout=WINDOW_SECONDS * 2)
        count = 1
    if count <= limit:
        return None
    return max(1, math.ceil((window + 1) * WINDOW_SECONDS - now))
