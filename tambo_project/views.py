from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import redirect
from django.templatetags.static import static
from django.views import csrf, defaults

from core.error_shapes import error_answer
from core.problems import Problem
from core.statements import database_ping

from tambo_project.middleware import django_error_answer


def healthz(request):
    """For load balancers and the compose healthcheck: 200 when the database answers."""
    try:
        database_ping()
    except Exception:  # noqa: BLE001 - any database failure means unhealthy
        # Every 503 says when to look again (docs/protocol.md#errors), this one too.
        return JsonResponse({"status": "unhealthy", "database": "unreachable"}, status=503,
                            headers={"Retry-After": str(settings.DB_RETRY_AFTER)})
    return JsonResponse({"status": "ok", "database": connection.vendor})


def favicon(request):
    return redirect(static("tambo/favicon.svg"))


def bad_request(request, exception=None):
    """handler400: a request Django refuses before any view (a malformed or disallowed Host header)."""
    answer = django_error_answer(request, 400, "BAD_REQUEST", "The request is malformed (its Host header, for one).")
    return answer if answer is not None else defaults.bad_request(request, exception)


def csrf_failure(request, reason=""):
    """CSRF_FAILURE_VIEW: an unsafe method without a CSRF token, on a route that checks it."""
    answer = django_error_answer(request, 403, "FORBIDDEN", "This request needs a CSRF token, or an API key instead "
                                                     "of a session cookie.")
    return answer if answer is not None else csrf.csrf_failure(request, reason)


def not_found(request, exception=None):
    """handler404: an unknown path. On the API the middleware has answered in the route's shape already
    (core/error_shapes.py); elsewhere a client that does not ask for HTML (an SDK, curl, fetch) gets a
    404 problem rather than a page it would show as its error message."""
    accept = request.headers.get("Accept", "")
    if "text/html" in accept:
        return defaults.page_not_found(request, exception)
    return error_answer(Problem(404, "NOT_FOUND", "No such resource."), request.path)
