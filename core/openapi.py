"""Pieces of the OpenAPI document every part of the API shares: the problem+json answers, the
security requirement, and pydantic models as components.

The document is assembled in tambo_project/openapi.py; the apps describe the routes drf-spectacular
cannot see (runs/openapi.py, assist/openapi.py, gateway/openapi.py) with these helpers.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import model_json_schema

from core.problems import PROBLEM_CONTENT_TYPE

SECURITY_SCHEME = "ApiKeyAuth"
BEARER_SCHEME = "BearerAuth"
# An operation takes the API key, or a bearer access token (docs/protocol.md#identity-by-token); the SDKs send both.
SECURITY = [{SECURITY_SCHEME: []}, {BEARER_SCHEME: []}]
PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}


PROBLEM_SCHEMA = {
    "type": "object",
    "description": "An RFC 9457 problem. Extra members depend on the code (for example `field`, "
                   "`currentRunId`, `missingToolCallIds`). Never carries a stack trace.",
    "properties": {
        "type": {"type": "string", "examples": ["urn:tambo:error:thread_not_found"]},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "instance": {"type": "string", "description": "The request path."},
        "code": {"type": "string", "examples": ["THREAD_NOT_FOUND"]},
        "field": {"type": "string", "description": "The offending field, for VALIDATION_ERROR."},
        "currentRunId": {"type": "string", "description": "The active run, for CONCURRENT_RUN and RUN_ACTIVE."},
    },
    "required": ["type", "title", "status", "detail", "instance", "code"],
    "additionalProperties": True,
}

_PROBLEM_DESCRIPTIONS = {
    "400": "Invalid request (`VALIDATION_ERROR` naming the field, `INVALID_CURSOR`, …).",
    "401": "Missing, unknown or revoked API key (`UNAUTHORIZED`).",
    "404": "Not found for this key and userKey (`THREAD_NOT_FOUND`, …); never reveals that it exists elsewhere.",
    "409": "The thread has an active run (`CONCURRENT_RUN` or `RUN_ACTIVE`, with `currentRunId`); retry after "
           "the `Retry-After` header's seconds.",
    "413": "The body is larger than the server's limit (`PAYLOAD_TOO_LARGE`).",
    "500": "An unexpected error (`INTERNAL_ERROR`); the body carries no details.",
    "503": "The database is unavailable or out of connections (`SERVICE_UNAVAILABLE`); retry after the "
           "`Retry-After` header's seconds.",
}

def problem(status: str) -> dict[str, Any]:
    answer = {"description": _PROBLEM_DESCRIPTIONS[status], "content": {PROBLEM_CONTENT_TYPE: {"schema": PROBLEM_REF}}}
    if status in ("409", "503"):
        answer["headers"] = {"Retry-After": {"description": "Seconds to wait before retrying.",
                                             "schema": {"type": "integer"}}}
    return answer


def add_model(components: dict[str, Any], model: type[BaseModel]) -> dict[str, str]:
    """Adds a request model and the models it uses to the components; returns a $ref to it.

    A sub-model drf-spectacular already registered (from the DRF views' bodies) is kept as it is:
    both come from the same pydantic class.
    """
    schema = model_json_schema(model, ref_template="#/components/schemas/{model}", mode="validation")
    for name, sub_schema in schema.pop("$defs", {}).items():
        components.setdefault(name, sub_schema)
    components[model.__name__] = schema
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def path_param(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}, "description": description}
