"""One hook per request: its Prometheus sample (route template and status), its access log line and,
with tracing on, its server span. Outermost in MIDDLEWARE, so it sees every answer, problems included.

Runs on the event loop for async requests (no thread hop); the route is Django's URL pattern
(`v1/threads/<str:thread_id>/runs`), never the raw path, so the label set stays bounded.
"""
from __future__ import annotations

import logging
import time

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings

from telemetry import metrics, tracing

log = logging.getLogger("tambo.access")


class TelemetryMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        started, span = time.monotonic(), tracing.request_span_start(request)
        response = self.get_response(request)
        _observe(request, response, started, span)
        return response

    async def __acall__(self, request):
        started, span = time.monotonic(), tracing.request_span_start(request)
        response = await self.get_response(request)
        _observe(request, response, started, span)
        return response


def route_of(request) -> str:
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "static" if request.path.startswith(settings.STATIC_URL) else "unmatched"
    return "/" + (match.route or "")


def _observe(request, response, started: float, span) -> None:
    route, status = route_of(request), response.status_code
    metrics.HTTP_REQUESTS.labels(route, str(status)).inc()
    metrics.sample_db_pool()  # every process keeps its own pool gauges fresh, not only the one scraped
    trace_id = tracing.current_trace_id()
    tracing.request_span_end(span, route=route, status=status)
    if settings.ACCESS_LOG:
        # The path without its query string: a query may carry a userKey, and the path has ids only.
        log.info("request", extra={"fields": {
            "method": request.method, "path": request.path, "route": route, "status": status,
            "duration_ms": round((time.monotonic() - started) * 1000, 1),
            "streaming": bool(getattr(response, "streaming", False)),
            "thread": (getattr(request, "resolver_match", None) and request.resolver_match.kwargs.get("thread_id")),
            "run": response.get("X-Run-Id"), "trace_id": trace_id}})
