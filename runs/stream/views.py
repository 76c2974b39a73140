"""`GET /v1/threads/{threadId}/runs/{runId}/events`: a run's events replayed, then followed live
(docs/protocol.md#resumable-runs), from whichever process; the frames are the run's own stream's, ids included."""
from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from core.db import db_call
from core.problems import validation_error
from core.sse import sse_response
from projects.auth import principal_aresolve
from runs import selectors
from runs.stream.feeds import flusher
from runs.stream.follow import REPLAY_PAGE, events_follow, event_log_reaches
from runs.stream.thread_stream import resume_point, thread_follow, thread_stream_start

MAX_SEQ = 2**31 - 1  # the log's column is a 32-bit integer


@csrf_exempt  # a read: any other method must learn it is 405, not a CSRF failure
@require_http_methods(["GET"])
async def run_events(request: HttpRequest, thread_id: str, run_id: str) -> HttpResponse:
    after = _after(request)
    principal = await principal_aresolve(request)
    facts = await db_call(selectors.run_replay_get, principal=principal, thread_id=thread_id, run_id=run_id,
                          user_key_raw=request.GET.get("userKey"), after=after)
    after = await _replay_from(facts, after)
    response = sse_response(events_follow(run_id, after, join_live=_join_live(facts)))
    response["X-Run-Id"] = run_id
    return response


def _join_live(facts: selectors.ReplayFacts) -> bool:
    """Whether a reader of a run that has not ended may take the events it lacks from this process's
    copy of the run (runs/stream/follow.py) rather than from the log: when they fit in half that copy's
    buffer, with room for the live ones arriving with them (a copy that had to drop some would cut
    the reader at once)."""
    framed = facts.backlog_chars * 4 + facts.backlog_events * 32  # UTF-8 at most, and the id lines
    return facts.final_seq is None and facts.backlog_events <= REPLAY_PAGE and (
        framed <= settings.RUN_EVENTS_BUFFER_BYTES // 2)


def _after(request: HttpRequest) -> int:
    """The id to replay after: the Last-Event-ID header, else `?after=`, else 0 (everything)."""
    field, raw = "Last-Event-ID", request.headers.get("Last-Event-ID")
    if raw is None:
        field, raw = "after", request.GET.get("after")
    if raw is None:
        return 0
    raw = raw.strip()
    # The length first: int() refuses more than 4,300 digits with a ValueError (a 500).
    if not raw.isascii() or not raw.isdigit() or len(raw) > len(str(MAX_SEQ)) or int(raw) > MAX_SEQ:
        raise validation_error(f"{field} must be the id of an event of this run (a whole number).", field=field)
    return int(raw)


async def _replay_from(facts: selectors.ReplayFacts, after: int) -> int:
    """The id to replay after. 400 for an id past the run's last event: known at once when the run
    streams in this process, has logged its last event, or (SQLite, one process) does not stream;
    for a run streaming in another process, once its event log has not reached the id within
    LOG_LAG_GRACE (its stream sends events a flush interval before it logs them)."""
    feed = flusher.feeds.get(facts.run_id)
    if feed is not None:
        feed.seal()
        last = feed.last_seq
    elif facts.final_seq is not None:
        if facts.died and after > facts.final_seq:
            # Its process died after sending events it never logged; all that is left is how it ended.
            return facts.final_seq - 1
        last = facts.final_seq
    elif after > facts.logged_seq and connection.vendor == "postgresql" and not facts.orphaned:
        last = await event_log_reaches(facts.run_id, after)
    else:
        last = facts.logged_seq
    if after > last:
        raise validation_error(f"Last-Event-ID {after} is past the run's last event ({last}).",
                               field="Last-Event-ID", lastEventId=last)
    return after


@csrf_exempt  # a read: any other method must learn it is 405, not a CSRF failure
@require_http_methods(["GET"])
async def thread_events(request: HttpRequest, thread_id: str) -> HttpResponse:
    """`GET /v1/threads/{threadId}/events`: the live thread stream (docs/protocol.md#the-live-thread-stream),
    for the callers who may read the thread."""
    resume = resume_point(request.headers.get("Last-Event-ID", request.GET.get("after")))
    principal = await principal_aresolve(request)
    start = await db_call(thread_stream_start, principal=principal, thread_id=thread_id,
                          user_key_raw=request.GET.get("userKey"), resume=resume)
    return sse_response(thread_follow(start))
