"""`GET /v1/threads/{threadId}/runs/{runId}/events`: a run's events replayed, then followed live
(spec section 12), from whichever process; the frames are the run's own stream's, ids included."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_http_methods

from core.db import db_call
from core.problems import Problem, response_for, validation_error
from core.sse import sse_response
from projects.auth import principal_aresolve
from runs import selectors
from runs.feeds import flusher
from runs.follow import events_follow

MAX_SEQ = 2**31 - 1  # the log's column is a 32-bit integer


@require_http_methods(["GET"])
async def run_events(request: HttpRequest, thread_id: str, run_id: str) -> HttpResponse:
    try:
        after = _after(request)
        principal = await principal_aresolve(request)
        facts = await db_call(selectors.run_replay_get, principal=principal, thread_id=thread_id, run_id=run_id,
                              user_key_raw=request.GET.get("userKey"))
        _check_not_future(facts, after)
    except Problem as problem:
        return response_for(problem, request.path)
    response = sse_response(events_follow(run_id, after))
    response["X-Run-Id"] = run_id
    return response


def _after(request: HttpRequest) -> int:
    """The id to replay after: the Last-Event-ID header, else `?after=`, else 0 (everything)."""
    field, raw = "Last-Event-ID", request.headers.get("Last-Event-ID")
    if raw is None:
        field, raw = "after", request.GET.get("after")
    if raw is None:
        return 0
    raw = raw.strip()
    if not raw.isascii() or not raw.isdigit() or int(raw) > MAX_SEQ:
        raise validation_error(f"{field} must be the id of an event of this run (a whole number).", field=field)
    return int(raw)


def _check_not_future(facts: selectors.ReplayFacts, after: int) -> None:
    """400 for an id past the run's last event. Known exactly when the run streams in this process or
    its last event is logged; an id of a run streaming elsewhere is taken as given (the log may lag the
    events its own stream already sent by a flush interval)."""
    feed = flusher.feeds.get(facts.run_id)
    if feed is not None:
        feed.seal()
        last = feed.last_seq
    else:
        last = facts.final_seq
    if last is not None and after > last:
        raise validation_error(f"Last-Event-ID {after} is past the run's last event ({last}).",
                               field="Last-Event-ID", lastEventId=last)
