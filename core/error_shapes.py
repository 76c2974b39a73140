"""Which error shape a route's callers read, by the route's path prefix: the one table, consulted by
the body-size limit (tambo_project/asgi_limits.py), the input check and the exception middleware
(tambo_project/middleware.py), and by the answers to what Django refuses itself (tambo_project/views.py).

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

from dataclasses import dataclass
from typing import Callable

from django.http import HttpResponse

from core.problems import Problem, response_for


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
    return (error_shape_for(path) or PROBLEM_JSON).answer(problem, safe_instance(path))


def safe_instance(path: str) -> str:
    # An answer echoes the path (a problem's `instance`); the refused characters must not come back in it.
    return path.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")
