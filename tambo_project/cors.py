"""CORS for the API, so browser apps on other origins can use the official client against us.

Project API keys are public by design (they ship in browser apps) and end users are told apart by
`userKey`, so cross-origin calls with an API key are the normal case. Credentials (the session
cookie of the browser page) are never allowed cross-origin: the answer carries no
Access-Control-Allow-Credentials, so a browser will not send or expose a session to another site.
"""
from django.conf import settings
from django.http import HttpResponse

from tambo_project.middleware import _HybridMiddleware, _is_api

ALLOW_HEADERS = "content-type, x-api-key, authorization, x-stainless-lang, x-stainless-package-version, " \
    "x-stainless-os, x-stainless-arch, x-stainless-runtime, x-stainless-runtime-version, " \
    "x-stainless-retry-count, x-stainless-timeout"
ALLOW_METHODS = "GET, POST, PATCH, DELETE, OPTIONS"
EXPOSE_HEADERS = "X-Thread-Id, X-Run-Id, Retry-After"


def _allowed_origin(origin: str) -> str | None:
    allowed = settings.CORS_ALLOWED_ORIGINS
    if "*" in allowed:
        return "*"
    return origin if origin in allowed else None


class CorsMiddleware(_HybridMiddleware):
    def before(self, request):
        origin = request.headers.get("Origin")
        if not origin or not _is_api(request) or request.method != "OPTIONS":
            return None
        response = HttpResponse(status=204)
        allowed = _allowed_origin(origin)
        if allowed:
            response["Access-Control-Allow-Origin"] = allowed
            response["Access-Control-Allow-Methods"] = ALLOW_METHODS
            response["Access-Control-Allow-Headers"] = ALLOW_HEADERS
            response["Access-Control-Max-Age"] = "600"
            response["Vary"] = "Origin"
        return response

    def after(self, request, response):
        origin = request.headers.get("Origin")
        if origin and _is_api(request):
            allowed = _allowed_origin(origin)
            if allowed:
                response["Access-Control-Allow-Origin"] = allowed
                response["Access-Control-Expose-Headers"] = EXPOSE_HEADERS
                response["Vary"] = "Origin"
        return response
