"""Errors as RFC 9457 problems (`application/problem+json`), docs/protocol.md#errors.

Service functions and views raise `Problem`; one function answers it in the route's shape, for both
view stacks (core/error_shapes.py `exception_answer`). No answer ever carries a stack trace or an
exception's own text.
"""
from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpResponse
from rest_framework import exceptions as drf_exc

PROBLEM_CONTENT_TYPE = "application/problem+json"

_TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    413: "Payload Too Large",
    415: "Unsupported Media Type",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    502: "Bad Gateway",
    503: "Service Unavailable",
}



class Problem(Exception):
    """A client-visible error with a stable `code` (docs/protocol.md#errors)."""

    def __init__(self, status: int, code: str, detail: str, **extra: Any):
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.extra = extra


def is_database_unavailable(exc: BaseException) -> bool:
    """The database cannot be reached or has no connection to give (an outage, a restart, a failover,
    an exhausted pool): a passing condition, answered 503, not a bug."""
    if isinstance(exc, (DatabaseUnavailable, OperationalError, InterfaceError)):
        return True
    # psycopg's own errors (a pool timeout, for one) when raised outside Django's wrapper. Imported
    # here because it is optional: a SQLite-only install has no psycopg.
    try:
        import psycopg
    except ImportError:  # pragma: no cover - SQLite-only installs
        return False
    return isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError))


# The Retry-After of a 409 for a thread another run holds: runs are seconds long, and a client that
# waits on its own (the official ones retry on Retry-After) should look again soon.
BUSY_RETRY_AFTER = 1


class DatabaseUnavailable(Problem):
    """The database cannot be reached or has no free connection: 503 with Retry-After (DB_RETRY_AFTER)."""

    def __init__(self) -> None:
        super().__init__(503, "SERVICE_UNAVAILABLE", "The service is temporarily unavailable; try again shortly.",
                         retryAfter=settings.DB_RETRY_AFTER)


def unavailable() -> Problem:
    return DatabaseUnavailable()


def validation_error(detail: str, **extra: Any) -> Problem:
    return Problem(400, "VALIDATION_ERROR", detail, **extra)


def problem_body(status: int, code: str, detail: str, instance: str = "", **extra: Any) -> dict:
    body = {
        "type": f"urn:tambo:error:{code.lower()}",
        "title": _TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
        "instance": instance,
        "code": code,
    }
    body.update(extra)
    return body


def problem_response(status: int, code: str, detail: str, instance: str = "", **extra: Any) -> HttpResponse:
    body = problem_body(status, code, detail, instance, **extra)
    response = HttpResponse(json.dumps(body), status=status, content_type=PROBLEM_CONTENT_TYPE)
    if "retryAfter" in extra:
        response["Retry-After"] = str(extra["retryAfter"])
    return response


def response_for(problem: Problem, instance: str = "") -> HttpResponse:
    return problem_response(problem.status, problem.code, problem.detail, instance, **problem.extra)


def _drf_problem(exc: drf_exc.APIException) -> Problem:
    if isinstance(exc, (drf_exc.NotAuthenticated, drf_exc.AuthenticationFailed)):
        return Problem(401, "UNAUTHORIZED", "A valid x-api-key header is required.")
    if isinstance(exc, drf_exc.ParseError):
        return validation_error("The request body is not valid JSON.")
    if isinstance(exc, drf_exc.UnsupportedMediaType):
        return Problem(415, "UNSUPPORTED_MEDIA_TYPE", "Send the body as application/json.")
    if isinstance(exc, drf_exc.MethodNotAllowed):
        return Problem(405, "METHOD_NOT_ALLOWED", str(exc.detail))
    if isinstance(exc, drf_exc.NotFound):
        return Problem(404, "NOT_FOUND", "No such resource.")
    if isinstance(exc, drf_exc.Throttled):
        return Problem(429, "RATE_LIMITED", "Too many requests.", retryAfter=int(exc.wait or 1))
    if isinstance(exc, drf_exc.PermissionDenied):
        return Problem(403, "FORBIDDEN", "Not allowed.")
    return Problem(exc.status_code, "VALIDATION_ERROR" if exc.status_code == 400 else "ERROR", str(exc.detail))


def problem_for(exc: BaseException) -> Problem | None:
    """The problem a known exception stands for: a Problem itself, DRF's own exceptions, a 404, a
    database outage (503 with Retry-After); None for anything else (a bug)."""
    if isinstance(exc, Problem):
        return exc
    if isinstance(exc, drf_exc.APIException):
        return _drf_problem(exc)
    if isinstance(exc, Http404):
        return Problem(404, "NOT_FOUND", "No such resource.")
    if is_database_unavailable(exc):
        return unavailable()
    return None
