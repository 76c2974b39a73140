"""Which error shape a route's callers read, by the route's path prefix: the one table, consulted by
the body-size limit (tambo_project/asgi_limits.py), the input check and the exception middleware
(tambo_project/middleware.py), and by the answers to what Django refuses itself (tambo_project/views.py).

`exception_answer` is the one place an exception a view raised is answered: views raise `Problem` and
do not catch it to answer it themselves (tests/test_one_door_for_problems.py holds them to that).

The API's routes (the v1 API and the SDK's older routes outside it, docs/protocol.md#cors-and-paths-outside-v1)
answer problem+json (core/problems.py). An app whose callers read another shape registers it for its
prefix when Django starts: the gateway OpenAI's error object under `/api` (its callers are OpenAI
clients, gateway/apps.py), the token exchange OAuth's under `/oauth` (RFC 6749, section 5.2,
projects/apps.py). So neither the configuration layer nor this module imports an app's error module
(an import contract in pyproject.toml). A path under no prefix is not the API: the page's and the
admin's; an unknown one there is still a 404 problem unless a browser asks for HTML
(tambo_project/views.py `not_found`).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

from django.http import HttpRequest, HttpResponse

from core.problems import Problem, is_database_unavailable, problem_for, response_for

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ErrorShape:
    """How one group of routes answers an error: `answer(problem, instance)` is the response."""

    name: str
    answer: Callable[[Problem, str], HttpResponse]


PROBLEM_JSON = ErrorShape("problem+json", response_for)

# Prefix (no trailing slash) -> shape; a prefix covers itself and every path below it.
# `/projects`, `/registry`, `/auth` and `/storage` are the SDK's older routes (projects/legacy_views.py).
_table: dict[str, ErrorShape] = {prefix: PROBLEM_JSON for prefix in (
    "/v1", "/threads", "/audio", "/projects", "/registry", "/auth", "/storage")}


def error_shape_register(prefix: str, shape: ErrorShape) -> None:
    """Routes at and below `prefix` answer errors in `shape` (called from an AppConfig.ready)."""
    _table[prefix.rstrip("/")] = shape


def error_shape_for(path: str) -> ErrorShape | None:
    """The shape of the longest prefix covering `path`; None off the API."""
    matches = [prefix for prefix in _table if path == prefix or path.startswith(prefix + "/")]
    return _table[max(matches, key=len)] if matches else None


def is_api_path(path: str) -> bool:
    return error_shape_for(path) is not None


def error_answer(problem: Problem, path: str) -> HttpResponse:
    """`problem` answered in the shape of `path`'s route; problem+json off the API (where something
    must still be answered without a view: the body limit's 413, a stray Problem)."""
    response = (error_shape_for(path) or PROBLEM_JSON).answer(problem, safe_instance(path))
    if problem.extra.get("isRetryable") is False:
        # The SDKs (Stainless ones, clientsdk, OpenAI's) retry a 5xx unless told not to; retrying a
        # model that refused the request (LLM_CLIENT_ERROR, telemetry/calls.py) would only fail again.
        response["x-should-retry"] = "false"
    return response


def exception_answer(exc: BaseException, request: HttpRequest | None) -> HttpResponse | None:
    """The answer to an exception a view raised, for both view stacks: the exception middleware's
    `process_exception` (plain and async views, tambo_project/middleware.py) and DRF's exception
    handler (`drf_exception_handler`). A Problem is answered in its route's shape on any path; DRF's
    own exceptions, a 404 and a database outage (503 with Retry-After) too; anything else on the API
    is a bug, logged with its trace and answered 500 with no detail. None for those off the API:
    Django's own page then (the admin's 404, for one).

    A Problem raised inside a stream, once its response was returned, reaches neither: the stream
    ends it in its own way (a RUN_ERROR event, the gateway's error chunk)."""
    path = request.path if request is not None else ""
    if isinstance(exc, Problem):
        return error_answer(exc, path)
    if not is_api_path(path):
        return None
    problem = problem_for(exc)
    if problem is None:
        log.exception("Unhandled error on %s", path)
        problem = Problem(500, "INTERNAL_ERROR", "An internal error occurred.")
    elif is_database_unavailable(exc):
        log.warning("Database unavailable on %s: %s", path, type(exc).__name__)
    return error_answer(problem, path)


def drf_exception_handler(exc: Exception, context: dict) -> HttpResponse | None:
    """DRF's EXCEPTION_HANDLER (settings.REST_FRAMEWORK): the same answer as every other view's."""
    return exception_answer(exc, context.get("request"))


def safe_instance(path: str) -> str:
    # An answer echoes the path (a problem's `instance`); the refused characters must not come back in it.
    return path.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")
