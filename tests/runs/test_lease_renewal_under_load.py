"""A process whose shared database threads are all busy keeps its runs (runs/renewal.py,
docs/operations.md#takeover): overload slows runs down, it does not hand them to another process.

The leases are renewed on a thread and a connection of their own, not behind the request work queued
on the `DB_THREADS` shared threads; and only while the process's event loop turns.
"""
from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Iterator

import psycopg
import pytest
from django.db import connection, connections

from core.db import db_call, executor
from projects.models import Project
from runs.control import RunControl, Watcher
from runs.lock import lock_held
from runs.models import Run
from tests.conftest import Api
from tests.support.live import LiveServer, database_url
from tests.support.sse import iter_frames, read_events
from threads import services
from threads.models import Thread

pytestmark = [pytest.mark.django_db(transaction=True)]

LEASE = 3.0  # a run's lease is taken over a third of it (1 s) after its last renewal
ENV = {"RUN_LEASE_SECONDS": str(LEASE), "RUN_WATCH_INTERVAL": "0.2", "DB_THREADS": "2"}
SLOW = "!stream 60 every 0.25"  # 15 s of deltas: the run streams through the whole test
QUEUED = 5  # run starts sent to the process while the table they write is locked: more than its DB_THREADS


@contextmanager
def two_servers() -> Iterator[tuple[LiveServer, LiveServer]]:
    a = LiveServer("overload-a", ENV)
    try:
        b = LiveServer("overload-b", ENV)
        try:
            yield a, b
        finally:
            b.stop()
    finally:
        a.stop()


def body(text: str) -> dict:
    return {"userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}


def start_and_read(url: str, key: str, text: str) -> tuple[str, list[str]]:
    response = Api(url, key).post("/v1/threads/runs", body(text), stream=True)
    assert response.status_code == 200, response.text
    return response.headers["X-Run-Id"], [event["type"] for event in read_events(response)]


def lease_at(db: psycopg.Connection, thread_id: str) -> tuple[float, float]:
    """(the thread's lease expiry, the database's now), as epoch seconds."""
    return db.execute("SELECT extract(epoch FROM lease_expires_at), extract(epoch FROM now()) FROM threads_thread "
                      "WHERE id = %s", (thread_id,)).fetchone()


def wait_for(predicate, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


def test_a_process_whose_database_threads_are_all_blocked_keeps_its_runs_and_then_serves_the_queued_starts(api_key):
    if connection.vendor != "postgresql":
        pytest.skip("LOCK TABLE and two processes: PostgreSQL")
    with two_servers() as (a, _), psycopg.connect(database_url(), autocommit=True) as db:
        started = Api(a.url, api_key).post("/v1/threads/runs", body(SLOW), stream=True)
        assert started.status_code == 200, started.text
        thread_id, run_id = started.headers["X-Thread-Id"], started.headers["X-Run-Id"]
        frames = iter_frames(started)
        seen = []
        for frame in frames:
            seen.append(frame)
            if frame[1]["type"] == "TEXT_MESSAGE_CONTENT":
                break
        first, _ = lease_at(db, thread_id)

        with psycopg.connect(database_url()) as locker, ThreadPoolExecutor(QUEUED) as pool:
            # Every run start stores its message: with the table locked, each start that reaches a
            # database thread of A waits there, holding it, and the others queue behind them.
            locker.execute("LOCK TABLE threads_message IN ACCESS EXCLUSIVE MODE")
            queued = [pool.submit(start_and_read, a.url, api_key, f"queued {n}") for n in range(QUEUED)]
            wait_for(lambda: db.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                        "AND wait_event_type = 'Lock'").fetchone()[0] >= int(ENV["DB_THREADS"]),
                     "every database thread of A to wait for the lock")
            # Held for two leases: the renewal that queued behind the starts let the lease go stale after
            # a third of one, and the other process took the run over.
            left = []
            held_until = time.monotonic() + 2 * LEASE
            while time.monotonic() < held_until:
                expires, now = lease_at(db, thread_id)
                left.append(expires - now)
                time.sleep(0.1)
            last, _ = lease_at(db, thread_id)
            locker.rollback()
            queued_runs = dict(future.result() for future in queued)
        # Each queued run ends, here or on B (see below).
        wait_for(lambda: Run.objects.filter(id__in=list(queued_runs), status=Run.Status.COMPLETED).count() == QUEUED,
                 "the queued runs to complete")
        rest = list(frames)

    assert min(left) > 0, left  # never expired
    assert last - first > LEASE  # renewed all along
    types = [event["type"] for _, event in seen + rest]
    assert types[-1] == "RUN_FINISHED" and "RUN_ERROR" not in types, types[-5:]
    assert not any(event.get("name") == "tambo.run.takeover" for _, event in seen + rest)
    run = Run.objects.get(id=run_id)
    assert run.status == Run.Status.COMPLETED and run.takeovers == [] and run.takeover_count == 0
    # The starts that waited went on once the lock was let go. Not each on A to its end, though: a start
    # held inside its own transaction commits a lease dated from before the wait, stale by then, and B
    # may take its run over as it commits (docs/operations.md#takeover); the run then completes on B.
    assert all(queued_types[0] == "RUN_STARTED" for queued_types in queued_runs.values()), queued_runs


@pytest.mark.both_dbs
def test_the_leases_are_renewed_while_the_shared_database_threads_are_busy_and_only_while_the_loop_turns(settings):
    settings.RUN_WATCH_INTERVAL = 0.05
    settings.RUN_LEASE_SECONDS = 1.5  # the lane stops renewing a loop that has not turned for 0.5 s
    project = Project.objects.create(name="renewal")
    thread = services.thread_create(project=project, user_key="alice")
    with lock_held(thread_id=thread.id, run_id="run_renewed") as held:
        Run.objects.create(id="run_renewed", thread=held)
    first = Thread.objects.get(id=thread.id).lease_expires_at
    release = threading.Event()
    busy = threading.Semaphore(0)

    def hold_a_database_thread() -> None:
        busy.release()
        release.wait(30)

    def lease() -> object:
        try:
            return Thread.objects.get(id=thread.id).lease_expires_at
        finally:
            connections.close_all()

    async def main() -> dict:
        seen = {}
        watcher = Watcher()
        # Every shared database thread busy: the watcher's tick (cancels, sweep …) waits behind them.
        blockers = [db_call(hold_a_database_thread) for _ in range(executor()._max_workers)]
        blocked = asyncio.gather(*blockers)
        for _ in range(executor()._max_workers):
            await asyncio.to_thread(busy.acquire)
        try:
            watcher.register(RunControl("run_renewed"))
            lane = watcher._lane
            deadline = time.monotonic() + 20
            while lane.renewals < 3 and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            seen["renewals while busy"] = lane.renewals
            seen["lease while busy"] = await asyncio.to_thread(lease)
        finally:
            release.set()
            await blocked
        # The loop stops turning (a blocking call): once the lane sees it, it renews nothing more.
        deadline = time.monotonic() + 10
        while not lane._stale_told and time.monotonic() < deadline:
            time.sleep(0.02)
        seen["stale told"], before = lane._stale_told, lane.renewals
        time.sleep(10 * settings.RUN_WATCH_INTERVAL)
        seen["renewed while stuck"] = lane.renewals - before
        # Turning again, the loop gets its leases renewed again.
        while lane.renewals == before and time.monotonic() < deadline + 10:
            await asyncio.sleep(0.02)
        seen["renewed after"] = lane.renewals - before
        await watcher.stop()
        seen["lane stopped"] = watcher._lane is None and not lane._thread.is_alive()
        return seen

    seen = asyncio.run(main())

    assert seen["renewals while busy"] >= 3 and seen["lease while busy"] > first
    assert seen["stale told"] and seen["renewed while stuck"] == 0
    assert seen["renewed after"] > 0 and seen["lane stopped"]
