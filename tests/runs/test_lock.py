"""The run lock itself (runs/lock.py) under contention, on PostgreSQL and on SQLite.

Each taker is a real OS thread with its own database connection, so the row lock (PostgreSQL) or
the IMMEDIATE transaction's write lock (SQLite) is what keeps them apart, not the test.
"""
from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any, Callable

import pytest
from django.db import transaction
from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from runs.lock import (LEASE_EXPIRED_CODE, lock_held, lock_mark_streaming, lock_release, lock_renew,
                       lock_request_cancel)
from runs.models import Run, RunEvent
from runs.starting import starting_runs
from core.problems import Problem
from threads import services
from threads.models import RunStatus, Thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]

TAKERS = 50


def at_once(count: int, action: Callable[[int], Any]) -> list[tuple[str, Any]]:
    """Runs `action(i)` in `count` threads released together; returns ("ok", value) or ("problem", Problem)."""
    barrier = threading.Barrier(count)
    results: list[tuple[str, Any]] = [("missing", None)] * count

    def work(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = ("ok", action(i))
        except Problem as problem:
            results[i] = ("problem", problem)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            results[i] = ("error", repr(exc))
        finally:
            connections.close_all()

    workers = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not any(worker.is_alive() for worker in workers), "a taker is stuck"
    errors = [value for kind, value in results if kind not in ("ok", "problem")]
    assert not errors, errors
    return results


@pytest.fixture
def thread(project) -> Thread:
    return services.thread_create(project=project, user_key="alice")


def take_with_run(thread: Thread, run_id: str) -> Thread:
    """Takes the lock the way run_start does: the Run row is written inside the lock's transaction."""
    with lock_held(thread_id=thread.id, run_id=run_id) as locked:
        Run.objects.create(id=run_id, thread=locked)
    return locked


def expire_lease(thread: Thread) -> None:
    Thread.objects.filter(id=thread.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


def test_of_fifty_simultaneous_takers_exactly_one_wins(thread):
    results = at_once(TAKERS, lambda i: take_with_run(thread, f"run_{i}").current_run_id)

    winners = [value for kind, value in results if kind == "ok"]
    losers = [value for kind, value in results if kind == "problem"]
    assert len(winners) == 1
    assert len(losers) == TAKERS - 1
    assert {(p.status, p.code) for p in losers} == {(409, "CONCURRENT_RUN")}
    assert {p.extra["currentRunId"] for p in losers} == {winners[0]}
    thread.refresh_from_db()
    assert thread.run_status == RunStatus.WAITING
    assert thread.current_run_id == winners[0]
    # The losers' Run rows were written inside their rolled-back transactions.
    assert list(Run.objects.values_list("id", flat=True)) == [winners[0]]


def test_takers_on_different_threads_do_not_block_each_other(project):
    threads = [services.thread_create(project=project, user_key="alice") for _ in range(10)]

    results = at_once(10, lambda i: take_with_run(threads[i], f"run_{i}").current_run_id)

    assert sorted(value for _, value in results) == sorted(f"run_{i}" for i in range(10))


def test_a_live_lease_refuses_the_next_taker(thread):
    take_with_run(thread, "run_a")

    with pytest.raises(Problem) as refused:
        take_with_run(thread, "run_b")

    assert refused.value.status == 409
    assert refused.value.code == "CONCURRENT_RUN"
    assert refused.value.extra == {"currentRunId": "run_a", "retryAfter": 1}
    assert not Run.objects.filter(id="run_b").exists()


def test_an_expired_lease_lets_the_next_taker_in_and_fails_the_dead_run(thread):
    take_with_run(thread, "run_dead")
    lock_mark_streaming(thread_id=thread.id, run_id="run_dead")
    expire_lease(thread)

    taken = take_with_run(thread, "run_next")

    assert taken.current_run_id == "run_next"
    dead = Run.objects.get(id="run_dead")
    assert dead.status == Run.Status.FAILED
    assert dead.error_code == LEASE_EXPIRED_CODE
    assert dead.finished_at is not None
    # Its readers (docs/protocol.md#resumable-runs) end with the run's error.
    (logged,) = RunEvent.objects.filter(run_id="run_dead").values_list("seq", "final", "data")
    assert logged[:2] == (1, True) and '"code":"RUN_LEASE_EXPIRED"' in logged[2]
    thread.refresh_from_db()
    assert thread.run_status == RunStatus.WAITING
    assert thread.last_run_error["code"] == LEASE_EXPIRED_CODE
    assert thread.lease_expires_at > timezone.now()


def test_a_takeover_with_no_recovery_registered_is_refused_and_changes_nothing(thread, monkeypatch):
    # Crash recovery registers what a takeover records (runs/apps.py); without it a dead run would
    # stay "streaming" for good, so the lock refuses rather than take over silently.
    take_with_run(thread, "run_dead")
    monkeypatch.setattr("runs.lock._takeover", None)

    # In one transaction: a server process's sweep of expired leases (another test's, on the same
    # database) must not record the expired run between the expiry and the take.
    with transaction.atomic():
        expire_lease(thread)
        # lock_held makes no savepoint of its own (a statement each way): the test's lets the outer
        # transaction go on after the refusal, as a request's whole transaction would roll back.
        with pytest.raises(RuntimeError, match="No lease takeover registered"), transaction.atomic():
            take_with_run(thread, "run_next")

        thread.refresh_from_db()
        assert thread.current_run_id == "run_dead"
        assert not Run.objects.filter(id="run_next").exists()


def test_of_fifty_takers_after_an_expired_lease_exactly_one_takes_over(thread):
    take_with_run(thread, "run_dead")
    expire_lease(thread)

    results = at_once(TAKERS, lambda i: take_with_run(thread, f"run_{i}").current_run_id)

    winners = [value for kind, value in results if kind == "ok"]
    assert len(winners) == 1
    assert {p.extra["currentRunId"] for kind, p in results if kind == "problem"} == {winners[0]}
    assert Run.objects.get(id="run_dead").status == Run.Status.FAILED
    assert set(Run.objects.values_list("id", flat=True)) == {"run_dead", winners[0]}


def test_a_finished_run_is_not_marked_failed_by_a_takeover(thread):
    take_with_run(thread, "run_a")
    Run.objects.filter(id="run_a").update(status=Run.Status.COMPLETED)
    expire_lease(thread)

    take_with_run(thread, "run_b")

    assert Run.objects.get(id="run_a").status == Run.Status.COMPLETED


def test_a_release_by_a_run_that_does_not_hold_the_lock_changes_nothing(thread):
    take_with_run(thread, "run_holder")
    Run.objects.create(id="run_other", thread=thread)
    before = Thread.objects.get(id=thread.id)

    released = lock_release(thread_id=thread.id, run_id="run_other", run_status=Run.Status.COMPLETED,
                            thread_fields={"last_completed_run_id": "run_other"})

    assert released is False
    after = Thread.objects.get(id=thread.id)
    assert (after.run_status, after.current_run_id, after.lease_expires_at, after.last_completed_run_id) == (
        before.run_status, before.current_run_id, before.lease_expires_at, before.last_completed_run_id)
    assert Run.objects.get(id="run_other").status == Run.Status.WAITING


def test_a_late_release_by_a_taken_over_run_changes_nothing(thread):
    take_with_run(thread, "run_dead")
    expire_lease(thread)
    take_with_run(thread, "run_next")

    released = lock_release(thread_id=thread.id, run_id="run_dead", run_status=Run.Status.COMPLETED)

    assert released is False
    thread.refresh_from_db()
    assert (thread.run_status, thread.current_run_id) == (RunStatus.WAITING, "run_next")
    assert Run.objects.get(id="run_dead").status == Run.Status.FAILED


def test_the_holder_releases_and_records_how_the_run_ended(thread):
    take_with_run(thread, "run_a")

    released = lock_release(thread_id=thread.id, run_id="run_a", run_status=Run.Status.FAILED,
                            thread_fields={"last_completed_run_id": "run_a"},
                            error_code="LLM_SERVER_ERROR", error_message="The model failed.")

    assert released is True
    thread.refresh_from_db()
    assert (thread.run_status, thread.current_run_id, thread.lease_expires_at) == (RunStatus.IDLE, None, None)
    assert thread.last_completed_run_id == "run_a"
    run = Run.objects.get(id="run_a")
    assert (run.status, run.error_code) == (Run.Status.FAILED, "LLM_SERVER_ERROR")
    # Released twice is still released once.
    assert lock_release(thread_id=thread.id, run_id="run_a", run_status=Run.Status.COMPLETED) is False
    assert Run.objects.get(id="run_a").status == Run.Status.FAILED


def test_after_a_release_the_next_taker_gets_the_lock(thread):
    take_with_run(thread, "run_a")
    lock_release(thread_id=thread.id, run_id="run_a", run_status=Run.Status.COMPLETED)

    assert take_with_run(thread, "run_b").current_run_id == "run_b"
    assert Run.objects.get(id="run_a").status == Run.Status.COMPLETED


def test_renew_extends_the_leases_of_held_runs_in_one_call(project):
    held = [services.thread_create(project=project, user_key="alice") for _ in range(3)]
    for i, thread in enumerate(held):
        take_with_run(thread, f"run_{i}")
    released = services.thread_create(project=project, user_key="alice")
    take_with_run(released, "run_released")
    lock_release(thread_id=released.id, run_id="run_released", run_status=Run.Status.COMPLETED)
    soon = timezone.now() + timedelta(seconds=2)
    Thread.objects.filter(id__in=[t.id for t in held]).update(lease_expires_at=soon)

    renewed = lock_renew(run_ids=["run_0", "run_1", "run_2", "run_released", "run_unknown"])

    assert renewed == 3
    for thread in held:
        thread.refresh_from_db()
        assert thread.lease_expires_at > soon
    released.refresh_from_db()
    assert released.lease_expires_at is None and released.run_status == RunStatus.IDLE


def test_renew_of_nothing_is_nothing():
    assert lock_renew(run_ids=[]) == 0


def test_only_the_holder_moves_the_thread_to_streaming(thread):
    take_with_run(thread, "run_a")

    assert lock_mark_streaming(thread_id=thread.id, run_id="run_b") is False
    assert Thread.objects.get(id=thread.id).run_status == RunStatus.WAITING
    assert lock_mark_streaming(thread_id=thread.id, run_id="run_a") is True
    assert Thread.objects.get(id=thread.id).run_status == RunStatus.STREAMING
    assert Run.objects.get(id="run_a").status == Run.Status.STREAMING


def test_request_cancel_flags_only_the_active_run(thread):
    take_with_run(thread, "run_old")
    lock_release(thread_id=thread.id, run_id="run_old", run_status=Run.Status.COMPLETED)
    take_with_run(thread, "run_active")

    assert lock_request_cancel(thread_id=thread.id, run_id="run_old") is False
    assert lock_request_cancel(thread_id=thread.id, run_id="run_unknown") is False
    assert lock_request_cancel(thread_id=thread.id, run_id="run_active") is True

    flagged = dict(Run.objects.values_list("id", "cancel_requested"))
    assert flagged == {"run_old": False, "run_active": True}


def test_request_cancel_after_the_release_flags_nothing(thread):
    take_with_run(thread, "run_a")
    lock_release(thread_id=thread.id, run_id="run_a", run_status=Run.Status.COMPLETED)

    assert lock_request_cancel(thread_id=thread.id, run_id="run_a") is False
    assert Run.objects.get(id="run_a").cancel_requested is False


def test_a_block_that_raises_writes_nothing_and_leaves_the_thread_free(thread):
    with pytest.raises(ValueError), lock_held(thread_id=thread.id, run_id="run_a") as locked:
        Run.objects.create(id="run_a", thread=locked)
        raise ValueError("refused after the lock was taken")

    thread.refresh_from_db()
    assert (thread.run_status, thread.current_run_id, thread.lease_expires_at) == (RunStatus.IDLE, None, None)
    assert not Run.objects.filter(id="run_a").exists()
    # No lease for the watcher to renew (runs/starting.py) for a run that never began.
    assert "run_a" not in starting_runs(max_age=60)
    assert take_with_run(thread, "run_b").current_run_id == "run_b"


def test_the_lock_notes_its_run_for_the_watcher_while_the_block_runs(thread):
    with lock_held(thread_id=thread.id, run_id="run_a") as locked:
        assert "run_a" in starting_runs(max_age=60)
        Run.objects.create(id="run_a", thread=locked)
    assert "run_a" in starting_runs(max_age=60)


def test_a_row_the_caller_locked_is_held_in_one_write_with_the_caller_s_changes(thread):
    with transaction.atomic():
        row = services.thread_lock(thread_id=thread.id)
        with CaptureQueriesContext(connections["default"]) as queries, \
                lock_held(thread=row, run_id="run_a", status=RunStatus.STREAMING) as locked:
            locked.pending_tool_call_ids = []
            locked.name = "named in the lock"
    # One statement for the lock and what the block changed on the row: its UPDATE.
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["UPDATE"]
    thread.refresh_from_db()
    assert (thread.run_status, thread.current_run_id, thread.name) == (RunStatus.STREAMING, "run_a",
                                                                       "named in the lock")


def test_a_row_the_caller_locked_is_refused_while_a_live_run_holds_it(thread):
    take_with_run(thread, "run_a")
    with pytest.raises(Problem) as refused, transaction.atomic():
        with lock_held(thread=services.thread_lock(thread_id=thread.id), run_id="run_b"):
            pass
    assert (refused.value.status, refused.value.code) == (409, "CONCURRENT_RUN")
    assert Thread.objects.get(id=thread.id).current_run_id == "run_a"
