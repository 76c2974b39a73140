"""Where tambo_project.sanity meets requests: one middleware, and the one way views read JSON bodies.

`InputSanityMiddleware` checks every request's path, query and headers, and parses the JSON body of
every API request once, before any view runs, so a route added later is covered without doing
anything. Views read that parsed body through `request_json` (the run views, the gateway) or DRF's
`request.data` (`JSONParser` below): no second parser exists.

Refusals take the shape of the route: OpenAI's error object under `/api/` (the gateway's callers
are OpenAI clients), OAuth's under `/oauth/` (RFC 6749, section 5.2), problem+json elsewhere.
"""
from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from rest_framework.parsers import BaseParser

from tambo_project import sanity
from tambo_project.middleware import _HybridMiddleware, _is_api, _too_large
from tambo_project.problems import response_for

_PARSED = "_sanity_json"
_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def request_json(request: HttpRequest) -> Any:
    """The request's JSON body, parsed and checked once (an empty body is `null`); raises InputError."""
    if not hasattr(request, _PARSED):
        setattr(request, _PARSED, sanity.loads(request.body) if request.body else None)
    return getattr(request, _PARSED)


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
        except RequestDataTooBig:
            return _too_large(request)  # a chunked body Django measured while reading it
        return None


def refusal(request: HttpRequest, error: sanity.InputError) -> HttpResponse:
    """The 400 answer for `error` in the shape callers of this path expect."""
    path = request.path
    if path.startswith("/api/"):
        from runs.gateway.errors import INVALID_REQUEST, openai_error_response

        param = None if error.field == "body" else error.field
        return openai_error_response(400, error.detail, INVALID_REQUEST, "invalid_value", param=param)
    if path.startswith("/oauth/"):
        from tambo_project.oauth import oauth_answer

        return oauth_answer({"error": "invalid_request", "error_description": error.detail}, 400)
    if _is_api(request):
        return response_for(error, _safe_instance(path))
    return HttpResponseBadRequest(error.detail, content_type="text/plain; charset=utf-8")


def _safe_instance(path: str) -> str:
    # The problem's `instance` echoes the path; the refused characters must not come back in it.
    return path.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


class JSONParser(BaseParser):
    """DRF's parser for application/json, through the one checked parser."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {}).get("request")
        if request is not None:
            return request_json(request._request)
        return sanity.loads(stream.read())
