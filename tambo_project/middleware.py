"""Middleware: the input check of every request, and every API answer a problem+json whatever
produced the error. (The body-size limit sits in front of Django: tambo_project/asgi_limits.py.)

`InputSanityMiddleware` checks every request's path, query and headers, and parses the JSON body of
every API request once (core/input_guard.py `request_json`), before any view runs, so a route added
later is covered without doing anything. Refusals take the shape of the route: OpenAI's error object
under `/api/` (the gateway's callers are OpenAI clients), OAuth's under `/oauth/` (RFC 6749, section
5.2), problem+json elsewhere.
"""
import logging

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

from core import db_health, sanity
from core.input_guard import request_json
from core.problems import (PROBLEM_CONTENT_TYPE, Problem, is_database_unavailable, problem_response,
                           response_for, unavailable)
from gateway.errors import INVALID_REQUEST, SERVER_ERROR, openai_error_response
from projects.oauth import oauth_answer

log = logging.getLogger(__name__)

# Paths the official SDKs call (docs/protocol.md#cors-and-paths-outside-v1): the v1 API, the SDK's older routes without `/v1`
# (thread names, suggestions), the OAuth token exchange, audio, and the chat-completions gateway.
API_PREFIXES = ("/v1/", "/threads/", "/oauth/", "/audio/", "/api/")
API_EXACT = ("/v1", "/threads", "/oauth", "/audio", "/api")


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIXES) or request.path in API_EXACT


class _HybridMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request):
        if iscoroutinefunction(self):
            return self._acall(request)
        early = self.before(request)
        return early if early is not None else self.after(request, self.get_response(request))

    async def _acall(self, request):
        early = self.before(request)
        return early if early is not None else self.after(request, await self.get_response(request))

    def before(self, request):
        return None

    def after(self, request, response):
        return response


class ProblemMiddleware(_HybridMiddleware):
    """Turns Django's own 404/405/500 answers under /v1 into problems; maps stray exceptions."""

    def before(self, request):
        # While the database is known to be down an API request is answered at once, not after
        # waiting DB_POOL_TIMEOUT for a connection (core/db_health.py).
        if _is_api(request) and db_health.known_down():
            return _unavailable(request, unavailable())
        return None

    def after(self, request, response):
        if not _is_api(request) or response.get("Content-Type", "").startswith(PROBLEM_CONTENT_TYPE):
            return response
        if request.path.startswith("/api/"):
            return response  # the gateway answers in OpenAI's error shape itself
        if response.status_code == 404 and not response.get("Content-Type", "").startswith("application/json"):
            return problem_response(404, "NOT_FOUND", "No such resource.", request.path)
        if response.status_code == 405 and not response.get("Content-Type", "").startswith("application/json"):
            problem = problem_response(405, "METHOD_NOT_ALLOWED", "Method not allowed.", request.path)
            if response.has_header("Allow"):
                # A 405 must say which methods the resource accepts (RFC 9110, section 15.5.6).
                problem["Allow"] = response["Allow"]
            return problem
        return response

    def process_exception(self, request, exception):
        if isinstance(exception, Problem):
            return response_for(exception, request.path)
        if _is_api(request) and is_database_unavailable(exception):
            return _unavailable(request, exception)
        if _is_api(request):
            log.exception("Unhandled error on %s", request.path)
            return problem_response(500, "INTERNAL_ERROR", "An internal error occurred.", request.path)
        return None


def _unavailable(request, exception) -> HttpResponse:
    """503 with Retry-After for a database outage (docs/protocol.md#design-for-scale), in the path's own error shape."""
    log.warning("Database unavailable on %s: %s", request.path, type(exception).__name__)
    problem = unavailable()
    if request.path.startswith("/api/"):
        return openai_error_response(503, problem.detail, SERVER_ERROR, "service_unavailable",
                                     retry_after=problem.extra["retryAfter"])
    return response_for(problem, request.path)


def error_answer(request: HttpRequest, status: int, code: str, detail: str) -> HttpResponse | None:
    """An error Django itself answers (a bad Host, a CSRF failure) in the shape of the route's callers:
    OpenAI's under /api/, OAuth's under /oauth/, problem+json elsewhere on the API; None off the API
    (Django's own page then)."""
    path = request.path
    if path.startswith("/api/"):
        return openai_error_response(status, detail, SERVER_ERROR if status >= 500 else INVALID_REQUEST,
                                     code.lower())
    if path.startswith("/oauth/"):
        return oauth_answer({"error": "invalid_request", "error_description": detail}, status)
    if _is_api(request):
        return problem_response(status, code, detail, _safe_instance(path))
    return None


_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def _is_json(request: HttpRequest) -> bool:
    # The run views and the gateway read the body whatever its declared type, so only the form
    # types (which they refuse anyway) are left to the views.
    content_type = request.content_type or ""
    return not content_type.startswith(_FORM_TYPES)


class InputSanityMiddleware(_HybridMiddleware):
    """400 for NUL, lone surrogates, over-deep JSON and out-of-range numbers, on every route."""

    def before(self, request):
        try:
            sanity.check_request(request.path, request.GET.lists(), request.META)
            if not _is_api(request):
                return None
            if request.content_type == "application/x-www-form-urlencoded":
                for name, values in request.POST.lists():
                    sanity.check_text(name, "form")
                    for value in values:
                        sanity.check_text(value, f"form.{name}")
            elif _is_json(request):
                request_json(request)
        except sanity.InputError as error:
            return refusal(request, error)
        return None


def refusal(request: HttpRequest, error: sanity.InputError) -> HttpResponse:
    """The 400 answer for `error` in the shape callers of this path expect."""
    path = request.path
    if path.startswith("/api/"):
        param = None if error.field == "body" else error.field
        return openai_error_response(400, error.detail, INVALID_REQUEST, "invalid_value", param=param)
    if path.startswith("/oauth/"):
        return oauth_answer({"error": "invalid_request", "error_description": error.detail}, 400)
    if _is_api(request):
        return response_for(error, _safe_instance(path))
    return HttpResponseBadRequest(error.detail, content_type="text/plain; charset=utf-8")


def _safe_instance(path: str) -> str:
    # The problem's `instance` echoes the path; the refused characters must not come back in it.
    return path.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")
