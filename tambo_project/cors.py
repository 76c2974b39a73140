"""CORS for the API, so browser apps on other origins can use the official SDKs against us (docs/protocol.md#cors-and-paths-outside-v1).

Project API keys are public by design (they ship in browser apps) and end users are told apart by
`userKey` or a bearer token, so cross-origin calls with an API key are the normal case. Credentials
(the session cookie of the browser page) are never allowed cross-origin: no answer carries
Access-Control-Allow-Credentials, so a browser will not send or expose a session to another site.

A preflight echoes the headers the browser asks for: the SDKs add their own (`X-Tambo-React-Version`,
`X-Stainless-*`, and more with each release), and a fixed list silently breaks every call of the next
release that adds one. Echoing is safe here because nothing is authorised by a cookie.
"""
import re

from django.conf import settings
from django.http import HttpResponse

from tambo_project.middleware import _HybridMiddleware, _is_api

ALLOW_METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS"
EXPOSE_HEADERS = "X-Thread-Id, X-Run-Id, Retry-After"
MAX_AGE = "600"
# Header names are RFC 9110 tokens; anything else in the request header is dropped, not echoed.
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$")


def _allowed_origin(origin: str) -> str | None:
    allowed = settings.CORS_ALLOWED_ORIGINS
    if "*" in allowed:
        return "*"
    return origin if origin in allowed else None


def _requested_headers(request) -> str:
    asked = request.headers.get("Access-Control-Request-Headers", "")
    names = [name.strip() for name in asked.split(",")]
    return ", ".join(name for name in names if _TOKEN.match(name))


def _vary(response) -> None:
    if "*" not in settings.CORS_ALLOWED_ORIGINS:
        response["Vary"] = "Origin"


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
            headers = _requested_headers(request)
            if headers:
                response["Access-Control-Allow-Headers"] = headers
            response["Access-Control-Max-Age"] = MAX_AGE
            response["Access-Control-Expose-Headers"] = EXPOSE_HEADERS
            _vary(response)
        return response

    def after(self, request, response):
        origin = request.headers.get("Origin")
        if origin and _is_api(request):
            allowed = _allowed_origin(origin)
            if allowed:
                response["Access-Control-Allow-Origin"] = allowed
                response["Access-Control-Expose-Headers"] = EXPOSE_HEADERS
                _vary(response)
        return response
