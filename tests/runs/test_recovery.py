"""Expired leases and partial-text checkpoints (docs/protocol.md#after-a-crash), against the database directly:
batched per tick, never one statement per run."""
from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from projects.models import Project
from runs import control as control_module
from runs.control import CHECKPOINT_INTERVAL, RunControl, Watcher
from runs.lock import lock_held, lock_request_cancel
from runs.models import Run, RunEvent
from runs.recovery.leases import checkpoint_write, expired_lease_sweep
from threads import services
from threads.models import Message, RunStatus, Thread
from threads.presenters import thread_to_wire

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]


@pytest.fixture
def project():
    return Project.objects.create(name="recovery")


def _locked_thread(project, run_id: str, expired: bool, partial: tuple[str, str] | None = None) -> Thread:
    """A thread locked by `run_id`. Make it `expired` inside the test's own transaction: the watcher of
    the session's server process sweeps this database too, and would otherwise record it first."""
    thread = services.thread_create(project=project, user_key="alice")
    with lock_held(thread_id=thread.id, run_id=run_id) as t:
        Run.objects.create(id=run_id, thread=t)
    if partial:
        Run.objects.filter(id=run_id).update(partial_message_id=partial[0], partial_text=partial[1])
    if expired:
        Thread.objects.filter(id=thread.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    return Thread.objects.get(id=thread.id)


def test_the_sweep_records_all_expired_threads_with_a_fixed_number_of_statements(project):
    live = _locked_thread(project, "run_live", expired=False, partial=("msg_live", "still going"))
    with transaction.atomic():
        dead = [_locked_thread(project, f"run_dead{i}", expired=True, partial=(f"msg_dead{i}", f"seen {i}"))
                for i in range(4)]
        quiet = _locked_thread(project, "run_quiet", expired=True)  # died before any text
        # What the dead processes had logged: two events of run_dead0, and run_dead1's last event
        # (it streamed to its end, then died before recording it).
        now = timezone.now()
        RunEvent.objects.bulk_create([
            RunEvent(run_id="run_dead0", seq=1, data='{"type":"RUN_STARTED"}', created_at=now),
            RunEvent(run_id="run_dead0", seq=2, data='{"type":"TEXT_MESSAGE_START"}', created_at=now),
            RunEvent(run_id="run_dead1", seq=1, data='{"type":"RUN_FINISHED"}', final=True, created_at=now)])
        with CaptureQueriesContext(connection) as queries:
            assert expired_lease_sweep() == 5
    # A read finds that something expired; then PostgreSQL records them all in one statement. SQLite
    # has no data-modifying CTEs: four reads and four writes (in a savepoint here: the test's own
    # transaction holds it), whatever the number of threads.
    assert len(queries) == (2 if connection.vendor == "postgresql" else 11), [q["sql"] for q in queries]
    # Each dead run's logged events end with the run's error, after what it had logged; a run whose
    # last event was logged keeps it. Only this test's runs: a run of an earlier test on this worker can
    # log its last event after that test's flush.
    ours = ["run_live", "run_quiet"] + [f"run_dead{i}" for i in range(4)]
    finals = {run_id: (seq, json.loads(data)) for run_id, seq, data in
              RunEvent.objects.filter(final=True, run_id__in=ours).values_list("run_id", "seq", "data")}
    assert finals.pop("run_dead1") == (1, {"type": "RUN_FINISHED"})
    assert {run_id: seq for run_id, (seq, _) in finals.items()} == {
        "run_dead0": 3, "run_dead2": 1, "run_dead3": 1, "run_quiet": 1}
    for _, event in finals.values():
        assert (event["type"], event["code"], event["isRetryable"]) == ("RUN_ERROR", "RUN_LEASE_EXPIRED", True)

    for i, thread in enumerate(dead + [quiet]):
        thread.refresh_from_db()
        assert (thread.run_status, thread.current_run_id, thread.lease_expires_at) == (RunStatus.IDLE, None, None)
        assert thread.last_run_error["code"] == "RUN_LEASE_EXPIRED"
        run = Run.objects.get(id=thread.runs.get().id)
        assert (run.status, run.error_code) == (Run.Status.FAILED, "RUN_LEASE_EXPIRED")
    for i, thread in enumerate(dead):
        (message,) = thread.messages.filter(role=Message.Role.ASSISTANT)
        assert (message.id, message.content, message.is_cancelled, message.run_id) == (
            f"msg_dead{i}", [{"type": "text", "text": f"seen {i}"}], True, f"run_dead{i}")
    assert not quiet.messages.filter(role=Message.Role.ASSISTANT).exists()
    live.refresh_from_db()
    assert (live.run_status, live.current_run_id) == (RunStatus.WAITING, "run_live")
    with CaptureQueriesContext(connection) as queries:
        assert expired_lease_sweep() == 0
    assert len(queries) == 1 and queries[0]["sql"].lstrip().upper().startswith("SELECT")


def test_the_sweep_does_not_store_a_checkpoint_whose_message_was_stored(project):
    with transaction.atomic():
        thread = _locked_thread(project, "run_d", expired=True, partial=("msg_done", "partial"))
        services.message_create(thread=thread, role=Message.Role.ASSISTANT,
                                content=[{"type": "text", "text": "the whole step"}], run_id="run_d",
                                message_id="msg_done")
        assert expired_lease_sweep() == 1
    (message,) = thread.messages.filter(role=Message.Role.ASSISTANT)
    assert message.content == [{"type": "text", "text": "the whole step"}] and not message.is_cancelled


def test_the_checkpoints_of_many_runs_are_written_in_one_statement(project):
    for i in range(3):
        _locked_thread(project, f"run_c{i}", expired=False)
    with CaptureQueriesContext(connection) as queries:
        checkpoint_write(checkpoints={f"run_c{i}": (f"msg_c{i}", f"text {i}") for i in range(3)})
    assert len(queries) == 1
    assert sorted(Run.objects.values_list("id", "partial_message_id", "partial_text")) == [
        (f"run_c{i}", f"msg_c{i}", f"text {i}") for i in range(3)]


def test_a_run_whose_lease_expired_is_not_active_and_cannot_be_cancelled(project):
    with transaction.atomic():
        thread = _locked_thread(project, "run_gone", expired=True)
        assert not lock_request_cancel(thread_id=thread.id, run_id="run_gone")
        assert not Run.objects.get(id="run_gone").cancel_requested
        thread.refresh_from_db()
        assert thread.current_run_id == "run_gone"  # nothing freed: that is the sweep's or the next run's job


def test_a_thread_whose_lease_expired_reads_idle_before_anyone_records_it(project):
    thread = _locked_thread(project, "run_gone", expired=True)
    shown = thread_to_wire(thread).wire()
    assert shown["runStatus"] == "idle" and "currentRunId" not in shown
    assert shown["lastRunError"]["code"] == "RUN_LEASE_EXPIRED"
    live = thread_to_wire(_locked_thread(project, "run_live", expired=False)).wire()
    assert live["runStatus"] == "waiting" and live["currentRunId"] == "run_live"


class _Step:
    def __init__(self, message_id: str, text: str):
        self.message_id, self.text = message_id, text


def test_the_watcher_checkpoints_a_run_at_most_once_a_second_and_only_when_its_text_changed(monkeypatch):
    written: list[dict] = []

    def tick_in_db(run_ids, checkpoints, cleanup=False, room=0, sweep=True):
        written.append(dict(checkpoints))
        return [], True, []

    monkeypatch.setattr(control_module, "_tick_in_db", tick_in_db)
    clock = [1000.0]
    monkeypatch.setattr(control_module.time, "monotonic", lambda: clock[0])
    watcher = Watcher()
    streaming, quiet = RunControl("run_a"), RunControl("run_b")
    streaming.step, quiet.step = _Step("msg_a", "Hel"), None
    watcher.controls = {"run_a": streaming, "run_b": quiet}

    async def ticks():
        await watcher.tick()  # first text: written
        streaming.step.text += "lo"
        clock[0] += CHECKPOINT_INTERVAL / 2
        await watcher.tick()  # changed, but too soon
        clock[0] += CHECKPOINT_INTERVAL / 2
        await watcher.tick()  # a second later: written
        clock[0] += CHECKPOINT_INTERVAL
        await watcher.tick()  # unchanged: nothing

    asyncio.run(ticks())
    assert written == [{"run_a": ("msg_a", "Hel")}, {}, {"run_a": ("msg_a", "Hello")}, {}]


def test_an_idle_watcher_looks_for_runs_to_take_over_once_a_second_and_makes_no_other_call(monkeypatch, settings):
    """Before, every tick (RUN_WATCH_INTERVAL: 0.5 s, 0.2 s in the tests' servers) of every idle
    process claimed and swept: two queries, and on SQLite a new connection (5 % of a core a process).
    A look that took runs over is followed by another at the next tick (a deploy hands over many)."""
    settings.RUN_LEASE_SECONDS = 30
    calls: list[tuple] = []
    claims = [[], [], ["run_x"], []]  # what each look takes over

    def tick_in_db(run_ids, checkpoints, cleanup=False, room=0, sweep=True):
        calls.append((clock[0] - 1000.0, list(run_ids), sweep))
        return [], True, claims.pop(0) if sweep else []

    async def take_over(run_id):
        pass

    monkeypatch.setattr(control_module, "_tick_in_db", tick_in_db)
    clock = [1000.0]
    monkeypatch.setattr(control_module.time, "monotonic", lambda: clock[0])
    watcher = Watcher()
    watcher._cleaned_at = clock[0]  # the event log's cleanup is not what is counted here
    monkeypatch.setattr(watcher, "_take_over", take_over)

    async def ticks():
        for _ in range(10):  # 2.5 s of ticks every quarter second, with no run
            await watcher.tick()
            clock[0] += 0.25
        watcher.controls = {"run_a": RunControl("run_a")}
        await watcher.tick()  # a run of its own: its cancels are polled every tick, without a look
        await asyncio.sleep(0)

    asyncio.run(ticks())
    assert calls == [(0.0, [], True), (1.0, [], True), (2.0, [], True), (2.25, ["run_x"], True),
                     (2.5, ["run_a"], False)]
