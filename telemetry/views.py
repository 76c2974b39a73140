"""`GET /metrics`: the Prometheus text format, served only with `METRICS_TOKEN` (as a bearer token)
or not at all on the main port (then `METRICS_PORT` serves it on its own)."""
from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpResponse

from core.problems import problem_response

from telemetry import metrics


async def metrics_view(request):
    # Async on purpose: it runs on the event loop, where Django refuses any database access, so a
    # scrape can never add a statement (tests/runs/test_statements.py counts a run's).
    token = settings.METRICS_TOKEN
    if not token:
        # Not served here: METRICS_PORT serves it, or no metrics are exposed at all.
        return problem_response(404, "NOT_FOUND", "Metrics are not served on this port.", request.path)
    given = request.headers.get("Authorization", "")
    if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        response = problem_response(401, "UNAUTHORIZED", "GET /metrics needs Authorization: Bearer <METRICS_TOKEN>.",
                                    request.path)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    body, content_type = metrics.exposition()
    return HttpResponse(body, content_type=content_type)
