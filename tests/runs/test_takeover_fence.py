"""The lease as a fence (docs/operations.md#takeover): of processes claiming one run, exactly one takes it
over, and a process that lost a run writes nothing for it. Real OS threads with their own connections
stand for the processes; a run row's `owner` says which process took it over."""
from __future__ import annotations


import pytest
from django.db import transaction

from runs import services
from runs.lock import LeaseLost, lock_release, lock_renew
from runs.models import THIS_PROCESS, Run, RunEvent
from runs.recovery.leases import expired_lease_sweep
from runs.recovery.takeover import runs_hand_over, takeover_claim
from tests.runs.test_lock import at_once, expire_lease, take_with_run
from threads import services as thread_services
from threads.models import Message, Thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]


@pytest.fixture
def thread(project) -> Thread:
    return thread_services.thread_create(project=project, user_key="alice")


def takeable(thread: Thread, run_id: str = "run_dead") -> Run:
    """A run that can be taken over, whose process stopped renewing its lease."""
    take_with_run(thread, run_id)
    Run.objects.filter(id=run_id).update(status=Run.Status.STREAMING, resume={})
    expire_lease(thread)
    return Run.objects.get(id=run_id)


def rows() -> dict[str, int]:
    return {"messages": Message.objects.count(), "runs": Run.objects.count(), "events": RunEvent.objects.count()}


def test_of_ten_processes_claiming_one_expired_run_exactly_one_takes_it_over(thread):
    run = takeable(thread)

    results = at_once(10, lambda i: takeover_claim(limit=5))

    claimed = [value for _, value in results if value]
    assert claimed == [[run.id]]
    run.refresh_from_db()
    assert run.takeover_count == 1 and len(run.takeovers) == 1 and run.owner == THIS_PROCESS
    assert run.takeovers[0]["reason"] == "lease_expired"
    fresh = Thread.objects.get(id=thread.id)
    assert fresh.current_run_id == run.id and fresh.has_live_run


def test_the_sweep_leaves_a_run_that_can_be_taken_over_to_a_takeover(thread):
    run = takeable(thread)

    assert expired_lease_sweep() == 0
    assert Run.objects.get(id=run.id).status == Run.Status.STREAMING
    # One that cannot be taken over (no stored request: an AG-UI run, or one from before takeovers) is failed.
    # In the test's own transaction: the session's server process sweeps this database too, every tick.
    with transaction.atomic():
        Run.objects.filter(id=run.id).update(resume=None)
        assert expired_lease_sweep() == 1
    assert Run.objects.get(id=run.id).error_code == "RUN_LEASE_EXPIRED"


def test_a_run_taken_over_as_often_as_the_limit_allows_is_not_taken_again(thread, settings):
    run = takeable(thread)
    with transaction.atomic():  # as above: before the session server's sweep can see it
        Run.objects.filter(id=run.id).update(takeover_count=settings.RUN_TAKEOVER_LIMIT)
        assert takeover_claim(limit=5) == []
        assert expired_lease_sweep() == 1


def test_a_process_that_lost_its_run_to_another_writes_nothing(thread):
    run = takeable(thread)
    assert takeover_claim(limit=5) == [run.id]
    Run.objects.filter(id=run.id).update(owner="proc_the_new_owner")  # another process took it over
    before = rows()
    thread_row = Thread.objects.filter(id=thread.id).values().get()

    with pytest.raises(LeaseLost):
        services.step_persist(thread=thread, run=run, message_id="msg_zombie",
                              content=[{"type": "text", "text": "half"}], cancelled=False)
    released = services.run_complete(thread=thread, run=run, last_step=dict(
        message_id="msg_zombie_end", content=[{"type": "text", "text": "late"}], cancelled=False))
    renewed = lock_renew(run_ids=[run.id])

    assert (released, renewed) == (False, 0)
    assert rows() == before
    assert Thread.objects.filter(id=thread.id).values().get() == thread_row
    assert Run.objects.get(id=run.id).status == Run.Status.STREAMING


def test_a_handed_over_run_is_taken_at_once_and_its_old_process_is_fenced_off(thread):
    take_with_run(thread, "run_handed")
    Run.objects.filter(id="run_handed").update(status=Run.Status.STREAMING, resume={})

    assert runs_hand_over(run_ids=["run_handed"]) == 1
    assert not Thread.objects.get(id=thread.id).has_live_run  # no lease to wait for
    assert lock_release(thread_id=thread.id, run_id="run_handed", run_status=Run.Status.FAILED) is False
    assert takeover_claim(limit=5) == ["run_handed"]
    assert Run.objects.get(id="run_handed").takeovers[0]["reason"] == "handover"


def test_a_process_never_takes_over_a_run_it_still_streams_or_starts(thread):
    run = takeable(thread)  # its lease looks stale: a renewal came late
    assert takeover_claim(limit=5, held=[run.id]) == []
    assert Run.objects.get(id=run.id).takeover_count == 0
    assert takeover_claim(limit=5) == [run.id]  # another process's claim
