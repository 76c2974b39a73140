"""Middleware: the input check of every request, and every API answer a problem+json whatever
produced the error. (The body-size limit sits in front of Django: tambo_project/asgi_limits.py.)

`InputSanityMiddleware` checks every request's path, query and headers, and parses the JSON body of
every API request once (core/input_guard.py `request_json`), before any view runs, so a route added
later is covered without doing anything. Refusals and errors take the shape of the route, from the
one table of route prefixes to error shapes (core/error_shapes.py): OpenAI's error object under
`/api/`, OAuth's under `/oauth/`, problem+json elsewhere on the API.
"""
import logging

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

from core import db_health, sanity
from core.input_guard import request_json
from core.error_shapes import error_answer, exception_answer, is_api_path
from core.problems import PROBLEM_CONTENT_TYPE, Problem, unavailable

log = logging.getLogger(__name__)


def _is_api(request: HttpRequest) -> bool:
    return is_api_path(request.path)


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
    """Turns Django's own 404/405 pages on the API into the route's error shape, and answers whatever a
    view raised: a Problem in its route's shape, anything else on the API a 500 (or a 503 for a
    database outage). Views do not catch a Problem to answer it themselves."""

    def before(self, request):
        # While the database is known to be down an API request is answered at once, not after
        # waiting DB_POOL_TIMEOUT for a connection (core/db_health.py).
        if _is_api(request) and db_health.known_down():
            return _unavailable(request, unavailable())
        return None

    def after(self, request, response):
        if not _is_api(request) or response.get("Content-Type", "").startswith(PROBLEM_CONTENT_TYPE):
            return response
        # A JSON answer is the view's own (the gateway's 404s and 405s are OpenAI's already).
        if response.status_code == 404 and not response.get("Content-Type", "").startswith("application/json"):
            return error_answer(Problem(404, "NOT_FOUND", "No such resource."), request.path)
        if response.status_code == 405 and not response.get("Content-Type", "").startswith("application/json"):
            problem = error_answer(Problem(405, "METHOD_NOT_ALLOWED", "Method not allowed."), request.path)
            if response.has_header("Allow"):
                # A 405 must say which methods the resource accepts (RFC 9110, section 15.5.6).
                problem["Allow"] = response["Allow"]
            return problem
        return response

    def process_exception(self, request, exception):
        # The one answer to what a view raised (core/error_shapes.py `exception_answer`), DRF's views'
        # too. Django calls this hook synchronously: for an async view, on a thread of the request.
        return exception_answer(exception, request)


def _unavailable(request, exception) -> HttpResponse:
    """503 with Retry-After for a database outage (docs/protocol.md#design-for-scale), in the path's own error shape."""
    log.warning("Database unavailable on %s: %s", request.path, type(exception).__name__)
    return error_answer(unavailable(), request.path)


def django_error_answer(request: HttpRequest, status: int, code: str, detail: str) -> HttpResponse | None:
    """An error Django itself answers (a bad Host, a CSRF failure) in the shape of the route's callers
    (core/error_shapes.py); None off the API (Django's own page then)."""
    return error_answer(Problem(status, code, detail), request.path) if _is_api(request) else None


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
    if _is_api(request):
        return error_answer(error, request.path)
    return HttpResponseBadRequest(error.detail, content_type="text/plain; charset=utf-8")
