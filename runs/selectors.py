"""Reads of runs for the API (HackSoft style: `<entity>_<action>`, keyword-only). Synchronous;
async views call them through db_call."""
from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Max, Q, Sum
from django.db.models.functions import Length

from core.problems import Problem
from projects.auth import Principal
from runs.models import Run, RunEvent
from runs.stream.event_log import replay_ended, run_orphaned
from threads.models import LEASE_EXPIRED_CODE


def run_get(*, principal: Principal, thread_id: str, run_id: str, user_key_raw: object) -> Run:
    """The run `run_id` of the requester's thread `thread_id` (docs/protocol.md#background-runs); 404
    RUN_NOT_FOUND for an unknown run and another user's or project's, as for threads. One statement."""
    user_key = principal.user_key_checked(user_key_raw)
    run = (Run.objects.filter(id=run_id, thread_id=thread_id, thread__project=principal.project,
                              thread__user_key=user_key)
           .only("id", "thread_id", "status", "previous_run_id", "model", "error_code", "error_message",
                 "created_at", "started_at", "finished_at").first())
    if run is None:
        raise Problem(404, "RUN_NOT_FOUND", f"Run {run_id} was not found.")
    return run


@dataclass
class ReplayFacts:
    run_id: str
    final_seq: int | None  # the id of the run's last event, once it is in the event log
    orphaned: bool  # the run ended long enough ago that a missing final event will never come
    logged_seq: int = 0  # the id of the last event in the event log (read when final_seq is None)
    backlog_events: int = 0  # of those, how many lie after the reader's id, and their characters
    backlog_chars: int = 0
    died: bool = False  # its process died: the events it sent after its last write to the log are lost


def run_replay_get(*, principal: Principal, thread_id: str, run_id: str, user_key_raw: object,
                   after: int = 0) -> ReplayFacts:
    """The run `run_id` of the requester's thread `thread_id`, for reading its events (docs/protocol.md#resumable-runs).

    404 RUN_NOT_FOUND for an unknown run, another user's or project's, and a run that ended more
    than RUN_REPLAY_SECONDS ago (its events are gone, or about to be).
    """
    user_key = principal.user_key_checked(user_key_raw)
    run = (Run.objects.filter(id=run_id, thread_id=thread_id, thread__project=principal.project,
                              thread__user_key=user_key)
           .only("id", "status", "finished_at", "error_code").first())
    if run is None or replay_ended(run):
        raise Problem(404, "RUN_NOT_FOUND", f"Run {run_id} was not found.")
    final_seq, logged = None, {}
    if run.finished_at is not None:
        final_seq = RunEvent.objects.filter(run_id=run_id, final=True).values_list("seq", flat=True).first()
    orphaned = final_seq is None and run_orphaned(run)
    if final_seq is None:
        backlog = Q(seq__gt=after)
        logged = RunEvent.objects.filter(run_id=run_id).aggregate(
            last=Max("seq"), events=Count("seq", filter=backlog), chars=Sum(Length("data"), filter=backlog))
    logged_seq = logged.get("last") or 0
    if orphaned and not logged_seq:
        # It ended long ago with nothing logged (an AG-UI run, or one from before the log existed).
        raise Problem(404, "RUN_NOT_FOUND", f"Run {run_id} has no events to replay.")
    return ReplayFacts(run_id=run_id, final_seq=final_seq, orphaned=orphaned, logged_seq=logged_seq,
                       backlog_events=logged.get("events") or 0, backlog_chars=logged.get("chars") or 0,
                       died=run.error_code == LEASE_EXPIRED_CODE)
