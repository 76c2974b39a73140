"""The OpenAPI description of /v1 beyond what drf-spectacular finds by itself.

drf-spectacular describes the DRF views (threads, messages, component state) from their
`extend_schema` and the pydantic wire models. The run endpoints are plain async Django views that
stream SSE, which it cannot see, so `postprocess_v1_schema` adds them from the same wire models.
It also adds the problem+json error answers every /v1 operation can give (spec section 7).

This module is imported by tambo_project/urls.py so the authentication extension is registered
before the first schema is generated.
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from pydantic import BaseModel
from pydantic.json_schema import model_json_schema

from clientsdk import types as wire
from tambo_project.openapi_oauth import BEARER_SCHEME, add_token_exchange

SECURITY_SCHEME = "ApiKeyAuth"
# An operation takes the API key, or a bearer access token (spec section 10); the SDKs send both.
SECURITY = [{SECURITY_SCHEME: []}, {BEARER_SCHEME: []}]
PROBLEM_CONTENT_TYPE = "application/problem+json"
PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}


SECURITY_DEFINITION = {
    "type": "apiKey",
    "in": "header",
    "name": "x-api-key",
    "description": "A project API key (`python manage.py createapikey --project NAME`).",
}


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "tambo_project.auth.ApiKeyAuthentication"
    name = SECURITY_SCHEME

    def get_security_definition(self, auto_schema):
        return SECURITY_DEFINITION


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
    "409": "The thread has an active run (`CONCURRENT_RUN` or `RUN_ACTIVE`, with `currentRunId`).",
    "413": "The body is larger than the server's limit (`PAYLOAD_TOO_LARGE`).",
    "500": "An unexpected error (`INTERNAL_ERROR`); the body carries no details.",
    "503": "The database is unavailable or out of connections (`SERVICE_UNAVAILABLE`); retry after the "
           "`Retry-After` header's seconds.",
}

AG_UI_EVENTS = """\
The answer is a stream of [AG-UI](https://docs.ag-ui.com) events, one per SSE message: a line
`data: <json>` followed by a blank line. Every event has `type` and `timestamp` (epoch milliseconds).

- `RUN_STARTED {threadId, runId}`: always first.
- `TEXT_MESSAGE_START {messageId, role: "assistant"}`, `TEXT_MESSAGE_CONTENT {messageId, delta}`…,
  `TEXT_MESSAGE_END {messageId}`; `messageId` is the stored `msg_` id.
- `TOOL_CALL_START {toolCallId, toolCallName, parentMessageId}`, `TOOL_CALL_ARGS {toolCallId, delta}`…,
  `TOOL_CALL_END {toolCallId}`: the model calls a tool.
- `TOOL_CALL_RESULT {messageId, toolCallId, content, role: "tool"}`: a server tool's result.
- `CUSTOM {name, value}` with `name` one of `tambo.component.start {messageId, componentId, componentName}`,
  `tambo.component.props_delta {componentId, operations}` (RFC 6902 JSON Patch),
  `tambo.component.end {componentId}`, and `tambo.run.awaiting_input {pendingToolCalls: [{toolCallId,
  toolName, arguments}]}` when the model called client tools: answer them in a new run with
  `previousRunId` and `tool_result` blocks.
- Last, exactly one of `RUN_FINISHED {threadId, runId}` or
  `RUN_ERROR {message, code, category: "client_error"|"server_error", isRetryable}`
  (`code` `CANCELLED` after a cancel).
"""

_STREAM_EXAMPLE = (
    'data: {"type":"RUN_STARTED","threadId":"thr_…","runId":"run_…","timestamp":1700000000000}\n\n'
    'data: {"type":"TEXT_MESSAGE_START","messageId":"msg_…","role":"assistant","timestamp":1700000000001}\n\n'
    'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"msg_…","delta":"Hello","timestamp":1700000000002}\n\n'
    'data: {"type":"TEXT_MESSAGE_END","messageId":"msg_…","timestamp":1700000000003}\n\n'
    'data: {"type":"RUN_FINISHED","threadId":"thr_…","runId":"run_…","timestamp":1700000000004}\n\n'
)


def _problem(status: str) -> dict[str, Any]:
    answer = {"description": _PROBLEM_DESCRIPTIONS[status], "content": {PROBLEM_CONTENT_TYPE: {"schema": PROBLEM_REF}}}
    if status == "503":
        answer["headers"] = {"Retry-After": {"description": "Seconds to wait before retrying.",
                                             "schema": {"type": "integer"}}}
    return answer


def _add_model(components: dict[str, Any], model: type[BaseModel]) -> dict[str, str]:
    """Adds a request model and the models it uses to the components; returns a $ref to it.

    A sub-model drf-spectacular already registered (from the DRF views' bodies) is kept as it is:
    both come from the same pydantic class.
    """
    schema = model_json_schema(model, ref_template="#/components/schemas/{model}", mode="validation")
    for name, sub_schema in schema.pop("$defs", {}).items():
        components.setdefault(name, sub_schema)
    components[model.__name__] = schema
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _path_param(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}, "description": description}


def _run_operation(operation_id: str, summary: str, body_ref: dict, headers: dict[str, Any],
                   parameters: list[dict]) -> dict[str, Any]:
    return {
        "operationId": operation_id,
        "summary": summary,
        "tags": ["runs"],
        "parameters": parameters,
        "requestBody": {"required": True, "content": {"application/json": {"schema": body_ref}}},
        "security": SECURITY,
        "responses": {
            "200": {
                "description": AG_UI_EVENTS,
                "headers": headers,
                "content": {"text/event-stream": {"schema": {"type": "string"}, "example": _STREAM_EXAMPLE}},
            },
            **{status: _problem(status) for status in ("400", "401", "404", "409", "413", "500", "503")},
        },
    }


def _run_paths(components: dict[str, Any]) -> dict[str, Any]:
    run_id_header = {"description": "The new run's id.", "schema": {"type": "string"}}
    thread_id = _path_param("threadId", "The thread's id (`thr_…`).")
    cancel_ref = _add_model(components, wire.CancelResult)
    return {
        "/v1/threads/runs": {"post": _run_operation(
            "threadsRunsCreateWithThread",
            "Create a thread and start a run on it",
            _add_model(components, wire.CreateThreadWithRunBody),
            {"X-Thread-Id": {"description": "The new thread's id.", "schema": {"type": "string"}},
             "X-Run-Id": run_id_header},
            [],
        )},
        "/v1/threads/{threadId}/runs": {"post": _run_operation(
            "threadsRunsCreate",
            "Start a run on a thread",
            _add_model(components, wire.CreateRunBody),
            {"X-Run-Id": run_id_header},
            [thread_id],
        )},
        "/v1/threads/{threadId}/runs/{runId}": {"delete": {
            "operationId": "threadsRunsCancel",
            "summary": "Cancel the thread's active run",
            "tags": ["runs"],
            "parameters": [
                thread_id,
                _path_param("runId", "The active run's id (`run_…`)."),
                {"name": "userKey", "in": "query", "required": False, "schema": {"type": "string"},
                 "description": "The end user the call acts for; required unless a bearer access token "
                                "names it."},
            ],
            "security": SECURITY,
            "responses": {
                "200": {"description": "The run was flagged for cancellation; its stream ends with "
                                       "`RUN_ERROR {code: \"CANCELLED\"}`.",
                        "content": {"application/json": {"schema": cancel_ref}}},
                "400": _problem("400"),
                "401": _problem("401"),
                "404": {"description": "No such thread for this userKey (`THREAD_NOT_FOUND`), or that run is "
                                       "not the thread's active run (`RUN_NOT_FOUND`).",
                        "content": {PROBLEM_CONTENT_TYPE: {"schema": PROBLEM_REF}}},
                "500": _problem("500"),
                "503": _problem("503"),
            },
        }},
    }


AG_UI_PREFIX = "AgUi"

AG_UI_ENDPOINT = """\
An [AG-UI](https://docs.ag-ui.com) agent endpoint (spec section 13): the body is AG-UI's
`RunAgentInput`, the end user `forwardedProps.userKey` (or a bearer token's user). `threadId` is the
client's own conversation id (created on first use, per user) or a server thread id `thr_…`. Messages
already stored are skipped; new user messages are the turn; `tool` messages answer the pending calls;
`tools` are client tools; `context` and `state` reach the model. At most `AGUI_MAX_MESSAGES` messages
(413 beyond). Components are a /v1 feature and are not offered here.
"""

AG_UI_EVENTS_PLAIN = """\
A stream of plain AG-UI events, one per SSE message (`data: <json>` and a blank line), that passes
`@ag-ui/client`'s verification: `RUN_STARTED {threadId, runId}` with the client's ids, then
`STATE_SNAPSHOT {snapshot}` (the thread's stored state), `TEXT_MESSAGE_START` / `TEXT_MESSAGE_CONTENT` /
`TEXT_MESSAGE_END`, `TOOL_CALL_START` / `TOOL_CALL_ARGS` / `TOOL_CALL_END`, `TOOL_CALL_RESULT` for server
tools, and last exactly one `RUN_FINISHED {threadId, runId, outcome?}` (a client tool call ends the run
with `outcome: {type: "success", pendingToolCallIds}`) or `RUN_ERROR {message, code}`. No `CUSTOM`
events. The server's own ids are in the `X-Thread-Id` and `X-Run-Id` headers.
"""


def _add_ag_ui_model(components: dict[str, Any], model: type[BaseModel]) -> dict[str, str]:
    """Adds an `ag_ui.core` model under prefixed names: AG-UI's `Message`, `Tool`… are not the wire's."""
    template = f"#/components/schemas/{AG_UI_PREFIX}{{model}}"
    schema = model_json_schema(model, ref_template=template, mode="validation")
    for name, sub_schema in schema.pop("$defs", {}).items():
        components[AG_UI_PREFIX + name] = sub_schema
    components[AG_UI_PREFIX + model.__name__] = schema
    return {"$ref": f"#/components/schemas/{AG_UI_PREFIX}{model.__name__}"}


def _agui_path(components: dict[str, Any]) -> dict[str, Any]:
    from ag_ui.core import RunAgentInput

    operation = _run_operation(
        "aguiRun", "Run an AG-UI agent turn on the client's thread", _add_ag_ui_model(components, RunAgentInput),
        {"X-Thread-Id": {"description": "The server's thread id (`thr_…`).", "schema": {"type": "string"}},
         "X-Run-Id": {"description": "The server's run id (`run_…`).", "schema": {"type": "string"}}},
        [],
    )
    operation["tags"] = ["ag-ui"]
    operation["description"] = AG_UI_ENDPOINT
    operation["responses"]["200"]["description"] = AG_UI_EVENTS_PLAIN
    operation["responses"]["404"] = {
        "description": "A `thr_…` threadId that is not this user's (`THREAD_NOT_FOUND`).",
        "content": {PROBLEM_CONTENT_TYPE: {"schema": PROBLEM_REF}}}
    operation["responses"]["413"] = {
        "description": "The body is over `MAX_REQUEST_BYTES`, or the history over `AGUI_MAX_MESSAGES` "
                       "(`PAYLOAD_TOO_LARGE`).",
        "content": {PROBLEM_CONTENT_TYPE: {"schema": PROBLEM_REF}}}
    return {"/v1/agui": {"post": operation}}


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
                responses.setdefault(status, _problem(status))
            operation["security"] = SECURITY
    paths.update(_run_paths(schemas))
    paths.update(_agui_path(schemas))
    add_token_exchange(result, SECURITY_SCHEME)
    from runs.assist.openapi import assist_paths  # imports this module: not at the top

    paths.update(assist_paths(schemas))
    # The chat-completions gateway lives outside /v1 but belongs in the same reference.
    from gateway.openapi import GATEWAY_SECURITY, GATEWAY_SECURITY_DEFINITION, gateway_paths

    components["securitySchemes"][GATEWAY_SECURITY] = GATEWAY_SECURITY_DEFINITION
    paths.update(gateway_paths())
    result["paths"] = dict(sorted(paths.items()))
    return result
