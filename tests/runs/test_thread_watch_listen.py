"""A thread stream starts the LISTEN connection that hears other processes on PostgreSQL only
(runs/stream/thread_watch.py). On SQLite there is one process and no LISTEN: started there, it
failed and reconnected every second for as long as the server ran (its log showed it in CI)."""
from __future__ import annotations

import asyncio

import pytest
from django.db import connection

from runs.stream.follow import follower
from runs.stream.thread_watch import thread_watch

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]


def test_a_thread_stream_listens_for_other_processes_on_postgresql_only():
    async def attached() -> bool:
        mirror = thread_watch.attach("thr_listen", None)
        try:
            return bool(follower._tasks)
        finally:
            thread_watch.detach(mirror)
            await follower.stop()
            await thread_watch.stop()

    assert asyncio.run(attached()) is (connection.vendor == "postgresql")
