"""Middleware that keeps every API answer a problem+json, whatever produced the error."""
from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse

from tambo_project.problems import (PROBLEM_CONTENT_TYPE, Problem, is_database_unavailable, problem_response,
                                    response_for, unavailable)

# Paths the official SDKs call (spec section 9): the v1 API, the SDK's older routes without `/v1`
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


class BodySizeLimitMiddleware(_HybridMiddleware):
    """Refuses bodies over MAX_REQUEST_BYTES with 413 before anything reads them."""

    def before(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > settings.MAX_REQUEST_BYTES:
            return _too_large(request)
        return None


def _too_large(request) -> HttpResponse:
    if request.path.startswith("/api/"):
        from runs.gateway.errors import openai_error_response

        return openai_error_response(413, "Request body too large.", "invalid_request_error", "payload_too_large")
    return problem_response(413, "PAYLOAD_TOO_LARGE",
                            f"The request body is larger than {settings.MAX_REQUEST_BYTES} bytes.", request.path)


class ProblemMiddleware(_HybridMiddleware):
    """Turns Django's own 404/405/500 answers under /v1 into problems; maps stray exceptions."""

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
        if isinstance(exception, RequestDataTooBig):
            return _too_large(request)
        if _is_api(request) and is_database_unavailable(exception):
            return _unavailable(request, exception)
        if _is_api(request):
            import logging

            logging.getLogger(__name__).exception("Unhandled error on %s", request.path)
            return problem_response(500, "INTERNAL_ERROR", "An internal error occurred.", request.path)
        return None


def _unavailable(request, exception) -> HttpResponse:
    """503 with Retry-After for a database outage (spec section 8), in the path's own error shape."""
    import logging

    logging.getLogger(__name__).warning("Database unavailable on %s: %s", request.path, type(exception).__name__)
    problem = unavailable()
    if request.path.startswith("/api/"):
        from runs.gateway.errors import openai_error_response

        return openai_error_response(503, problem.detail, "server_error", "service_unavailable",
                                     retry_after=problem.extra["retryAfter"])
    return response_for(problem, request.path)
