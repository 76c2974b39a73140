"""The one way views read JSON bodies: parsed and checked once by core.sanity.

The input middleware (tambo_project/middleware.py `InputSanityMiddleware`) parses the JSON body of
every API request before any view runs; views read that parsed body through `request_json` (the run
views, the gateway) or DRF's `request.data` (`JSONParser` below): no second parser exists.
"""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from rest_framework.parsers import BaseParser

from core import sanity

_PARSED = "_sanity_json"


def request_json(request: HttpRequest) -> Any:
    """The request's JSON body, parsed and checked once (an empty body is `null`); raises InputError."""
    if not hasattr(request, _PARSED):
        setattr(request, _PARSED, sanity.loads(request.body) if request.body else None)
    return getattr(request, _PARSED)


class JSONParser(BaseParser):
    """DRF's parser for application/json, through the one checked parser."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {}).get("request")
        if request is not None:
            return request_json(request._request)
        return sanity.loads(stream.read())
