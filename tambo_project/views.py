from django.db import connection
from django.http import JsonResponse
from django.shortcuts import redirect
from django.templatetags.static import static
from django.views import csrf, defaults

from tambo_project.middleware import django_error_answer


def healthz(request):
    """For load balancers and the compose healthcheck: 200 when the database answers."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:  # noqa: BLE001 - any database failure means unhealthy
        return JsonResponse({"status": "unhealthy", "database": "unreachable"}, status=503)
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
