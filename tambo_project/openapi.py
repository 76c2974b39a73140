"""The OpenAPI description of /v1 beyond what drf-spectacular finds by itself.

drf-spectacular describes the DRF views (threads, messages, component state) from their
`extend_schema` and the pydantic wire models. `postprocess_v1_schema` adds what it cannot see: the
run endpoints (runs/openapi.py), names and suggestions (assist/openapi.py), the token exchange
(projects/openapi.py), voice (projects/voice_openapi.py), forgetting a user (retention/openapi.py),
revoking MCP grants (tools/openapi.py) and the chat-completions gateway
(gateway/openapi.py), and the problem+json error answers every /v1 operation can give
(docs/protocol.md#errors, core/openapi.py).

This module is imported by tambo_project/urls.py so the authentication extension is registered
before the first schema is generated.
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension

from assist.openapi import assist_paths
from core.openapi import PROBLEM_SCHEMA, SECURITY, SECURITY_SCHEME, problem
from gateway.openapi import GATEWAY_SECURITY, GATEWAY_SECURITY_DEFINITION, gateway_paths
from projects.openapi import add_token_exchange
from projects.voice_openapi import audio_paths
from retention.openapi import SESSION_DEFINITION, SESSION_SCHEME, user_forget_path
from runs.openapi import agui_path, run_events_path, run_paths, thread_events_path
from tools.openapi import mcp_grants_path

SECURITY_DEFINITION = {
    "type": "apiKey",
    "in": "header",
    "name": "x-api-key",
    "description": "A project API key (`python manage.py createapikey --project NAME`).",
}


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "projects.auth.ApiKeyAuthentication"
    name = SECURITY_SCHEME

    def get_security_definition(self, auto_schema):
        return SECURITY_DEFINITION


def _problem_statuses(path: str, method: str) -> list[str]:
    statuses = ["400", "401"]
    if "{threadId}" in path:
        statuses.append("404")
    if method == "delete" or path.endswith("/state"):
        statuses.append("409")
    if method in ("post", "patch"):
        statuses.append("413")
    return statuses + ["500", "503"]


def postprocess_v1_schema(result: dict[str, Any], generator, request, public) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: run endpoints, the Problem schema, error answers."""
    components = result.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    schemas["Problem"] = PROBLEM_SCHEMA
    components.setdefault("securitySchemes", {})[SECURITY_SCHEME] = SECURITY_DEFINITION
    paths = result.setdefault("paths", {})
    for path, operations in paths.items():
        if not path.startswith("/v1/"):
            continue
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            for status in _problem_statuses(path, method):
                responses.setdefault(status, problem(status))
            operation["security"] = SECURITY
    paths.update(run_paths(schemas))
    paths.update(run_events_path())
    paths.update(thread_events_path())
    paths.update(agui_path(schemas))
    add_token_exchange(result, SECURITY_SCHEME)
    paths.update(assist_paths(schemas))
    paths.update(audio_paths())
    components["securitySchemes"][SESSION_SCHEME] = SESSION_DEFINITION
    paths.update(user_forget_path())
    paths.update(mcp_grants_path())
    # The chat-completions gateway lives outside /v1 but belongs in the same reference.
    components["securitySchemes"][GATEWAY_SECURITY] = GATEWAY_SECURITY_DEFINITION
    paths.update(gateway_paths())
    result["paths"] = dict(sorted(paths.items()))
    return result
