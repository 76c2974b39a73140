"""The gateway's operations in the OpenAPI description (/v1/openapi.json, /v1/docs).

The gateway speaks OpenAI's protocol, so its bodies are described in words and by OpenAI's own
reference rather than restated field by field; what is particular to this server (auth, the
allow-list, error shapes) is spelled out.
"""
from __future__ import annotations

from typing import Any

GATEWAY_SECURITY = "GatewayKey"
GATEWAY_SECURITY_DEFINITION = {
    "type": "http",
    "scheme": "bearer",
    "description": "The project API key as `Authorization: Bearer <key>` (or `x-api-key`), as OpenAI clients "
                   "send it; a logged-in browser session with its CSRF token also works.",
}

_OPENAI_ERROR = {
    "type": "object",
    "description": "OpenAI's error shape.",
    "properties": {"error": {"type": "object", "properties": {
        "message": {"type": "string"}, "type": {"type": "string"}, "code": {"type": ["string", "null"]},
        "param": {"type": ["string", "null"]}}}},
}


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _OPENAI_ERROR}}}


_MODEL = {
    "type": "object",
    "properties": {"id": {"type": "string", "examples": ["offline"]}, "object": {"const": "model"},
                   "created": {"type": "integer"}, "owned_by": {"type": "string"},
                   "supported_parameters": {"type": "array", "items": {"type": "string"},
                                            "description": "The request parameters this model honours; "
                                                           "another answer-shaping one is a 400."}},
    "required": ["id", "object", "created", "owned_by"],
}


def gateway_paths() -> dict[str, Any]:
    security = [{GATEWAY_SECURITY: []}]
    common_errors = {"401": _error("Missing or unknown project API key (`invalid_api_key`)."),
                     "500": _error("An unexpected error (`internal_error`).")}
    return {
        "/api/chat/completions": {"post": {
            "operationId": "gatewayChatCompletionsCreate",
            "summary": "Create a chat completion (OpenAI-compatible)",
            "description": "OpenAI's chat-completions protocol, answered by the model the allow-list "
                           "(`GATEWAY_MODELS`) maps the requested `model` alias to (`GATEWAY_DEFAULT_MODEL` when "
                           "none is named). `stream: true` answers `text/event-stream` chunks ending with "
                           "`data: [DONE]`; a failure after the first chunk ends the stream with one error event. "
                           "No thread is kept: send the whole conversation each time. Requests per key are "
                           "limited (`GATEWAY_RATE_LIMIT_PER_MINUTE`).",
            "tags": ["gateway"],
            "security": security,
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "description": "OpenAI's chat-completions request (`messages`, `model`, "
                                                 "`stream`, `tools`, `tool_choice`, `max_tokens`, `temperature`, …).",
                "properties": {"model": {"type": "string"}, "messages": {"type": "array", "items": {"type": "object"}},
                               "stream": {"type": "boolean"}},
                "required": ["messages"]}}}},
            "responses": {
                "200": {"description": "A `chat.completion`, or with `stream: true` a stream of "
                                       "`chat.completion.chunk` events.",
                        "content": {"application/json": {"schema": {"type": "object"}},
                                    "text/event-stream": {"schema": {"type": "string"}}}},
                "400": _error("Invalid request, or a model that is not on the allow-list (`model_not_found`)."),
                **common_errors,
                "413": _error("The body is larger than the server's limit (`payload_too_large`)."),
                "429": _error("Too many requests for this key (`rate_limit_exceeded`); see `Retry-After`."),
                "502": _error("The model provider failed."),
            },
        }},
        "/api/responses": {"post": {
            "operationId": "gatewayResponsesCreate",
            "summary": "Create a response (OpenAI Responses API)",
            "description": "OpenAI's Responses API over the same allow-list, limits and model call as the chat "
                           "completions: text and function-call output items, `function_call_output` turns, "
                           "`instructions`, usage; `stream: true` answers `response.*` events ending with "
                           "`response.completed`. Nothing is stored: `previous_response_id` is a 400.",
            "tags": ["gateway"],
            "security": security,
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "description": "OpenAI's Responses request (`model`, `input`, `instructions`, "
                                                 "`tools`, `tool_choice`, `max_output_tokens`, `text`, `stream`, …).",
                "properties": {"model": {"type": "string"}, "input": {"type": ["string", "array"]},
                               "stream": {"type": "boolean"}},
                "required": ["input"]}}}},
            "responses": {
                "200": {"description": "A `response` object, or with `stream: true` a stream of `response.*` "
                                       "events.",
                        "content": {"application/json": {"schema": {"type": "object"}},
                                    "text/event-stream": {"schema": {"type": "string"}}}},
                "400": _error("Invalid request, an unsupported item, tool or parameter, `previous_response_id`, "
                              "or a model that is not on the allow-list (`model_not_found`)."),
                **common_errors,
                "413": _error("The body is larger than the server's limit (`payload_too_large`)."),
                "429": _error("Too many requests for this key (`rate_limit_exceeded`); see `Retry-After`."),
                "502": _error("The model provider failed."),
            },
        }},
        "/api/models": {"get": {
            "operationId": "gatewayModelsList",
            "summary": "List the models the gateway allows",
            "description": "The allow-list in OpenAI's shape (`client.models.list()`), the default model first.",
            "tags": ["gateway"],
            "security": security,
            "responses": {
                "200": {"description": "The allowed models.", "content": {"application/json": {"schema": {
                    "type": "object", "properties": {"object": {"const": "list"},
                                                     "data": {"type": "array", "items": _MODEL}}}}}},
                **common_errors,
            },
        }},
        "/api/models/{model}": {"get": {
            "operationId": "gatewayModelsRetrieve",
            "summary": "Get one allowed model",
            "tags": ["gateway"],
            "security": security,
            "parameters": [{"name": "model", "in": "path", "required": True, "schema": {"type": "string"},
                            "description": "A model alias, e.g. `offline`."}],
            "responses": {
                "200": {"description": "The model.", "content": {"application/json": {"schema": _MODEL}}},
                "404": _error("No such model on the allow-list (`model_not_found`)."),
                **common_errors,
            },
        }},
    }
