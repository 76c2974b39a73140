"""Thread names and suggestions over HTTP (docs/protocol.md#endpoints and #thread-names-and-suggestions). Thin: parse, call a service, render.

Async views, because each waits on a model: a sync view would hold a worker thread and its
database connection for the whole call; their few database calls go to the bounded database
workers (core/db.py), as the run path's do. Auth is the same Principal as every /v1 view. A refusal or
a model's failure rises as a Problem to ProblemMiddleware (core/error_shapes.py `exception_answer`).
"""
from __future__ import annotations

import asyncio
import time

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from assist.names import thread_name_generate
from assist.suggestions import suggestion_generate, suggestion_list, thread_run_status
from clientsdk import wire
from core.db import db_call
from core.input_guard import request_json
from core.problems import Problem
from core.validation import int_param, parse_body
from projects.auth import Principal, principal_aresolve
from threads.presenters import named_thread_to_wire, suggestion_to_wire

# Suggestions are at most 10 per message (maxSuggestions), so a whole list always fits one page.
LEGACY_LIST_LIMIT = 100


def _query_user_key(request: HttpRequest) -> str | None:
    # `contextKey` is what @tambo-ai/typescript-sdk's beta thread methods call the end user.
    return request.GET.get("userKey") or request.GET.get("contextKey")


def _json_object(request: HttpRequest) -> dict:
    if not request.body.strip():
        return {}  # the SDK's generate calls may send no body at all
    return request_json(request)


@csrf_exempt
@require_http_methods(["POST"])
async def generate_name(request: HttpRequest, thread_id: str) -> HttpResponse:
    principal = await principal_aresolve(request)
    user_key = principal.user_key_optional(_query_user_key(request))
    thread = await thread_name_generate(project=principal.project, user_key=user_key, thread_id=thread_id)
    return JsonResponse(named_thread_to_wire(thread).wire())


@csrf_exempt
@require_http_methods(["GET", "POST"])
async def suggestions(request: HttpRequest, thread_id: str, message_id: str) -> HttpResponse:
    """`/v1/…/suggestions`: `{suggestions, hasMore, nextCursor?}`."""
    limit = (int_param(request.GET.get("limit"), name="limit", default=10, low=1, high=100)
             if request.method == "GET" else 0)  # a generated set is always one whole page
    rows, next_cursor, has_more = await _suggestions(request, thread_id, message_id, limit=limit,
                                                     cursor=request.GET.get("cursor"))
    page = wire.SuggestionPage(suggestions=[suggestion_to_wire(s) for s in rows], has_more=has_more,
                               next_cursor=next_cursor)
    return JsonResponse(page.wire())


@csrf_exempt
@require_http_methods(["GET", "POST"])
async def legacy_suggestions(request: HttpRequest, thread_id: str, message_id: str) -> HttpResponse:
    """`/threads/…/suggestions`, the path `TamboClient` uses: a bare `Suggestion[]`."""
    rows, _, _ = await _suggestions(request, thread_id, message_id, limit=LEGACY_LIST_LIMIT, cursor=None)
    return JsonResponse([suggestion_to_wire(s).wire() for s in rows], safe=False)


async def _suggestions(request: HttpRequest, thread_id: str, message_id: str, *, limit: int,
                       cursor: str | None) -> tuple[list, str | None, bool]:
    """POST generates the message's suggestions (the whole new set, one page); GET lists a page of the
    stored ones. Returns (rows, next cursor, has more); raises Problem."""
    principal = await principal_aresolve(request)
    scope = {"project": principal.project, "thread_id": thread_id, "message_id": message_id}

    async def answer():
        if request.method == "POST":
            return await _generate(request, principal, scope), None, False
        return await db_call(suggestion_list, **scope, user_key=principal.user_key_optional(_query_user_key(request)),
                             limit=limit, cursor=cursor)

    try:
        return await answer()
    except Problem as problem:
        # A client may ask about the answer of a run it has just stopped before the run's end is stored
        # (@tambo-ai/react asks as soon as it shows the stop, before its DELETE is answered): once that
        # run has ended, the answer is there (issue 35).
        if problem.code != "MESSAGE_NOT_FOUND" or not await _run_ended(principal.project, thread_id):
            raise
    return await answer()


async def _run_ended(project, thread_id: str) -> bool:
    """Waits, at most RUN_CANCEL_WAIT_SECONDS, for any run under way on the thread to end; False when
    it did not end in time. True also when none was under way: the run may have ended and stored the
    answer between the first read and this one, so the caller reads once more (a message that truly
    does not exist is then a 404 again). Holds no database connection while it waits."""
    deadline = time.monotonic() + settings.RUN_CANCEL_WAIT_SECONDS
    while await db_call(thread_run_status, project=project, thread_id=thread_id) not in (None, "idle"):
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def _generate(request: HttpRequest, principal: Principal, scope: dict):
    body = parse_body(wire.CreateSuggestionsBody, _json_object(request))
    # The body names the user, as on every POST; the query is accepted too, as for generate-name.
    user_key = principal.user_key_optional(body.user_key if body.user_key is not None else _query_user_key(request))
    return await suggestion_generate(**scope, user_key=user_key, max_suggestions=body.max_suggestions,
                                      components=body.available_components or ())
