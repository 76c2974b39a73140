"""The OpenAPI description of the name and suggestion routes (async views drf-spectacular cannot see).

Called from tambo_project/openapi.py's postprocessing hook; built from the same wire models the
views answer with.
"""
from __future__ import annotations

from typing import Any

from clientsdk import wire
from core.openapi import PROBLEM_REF, SECURITY, add_model, path_param, problem
from core.problems import PROBLEM_CONTENT_TYPE

_MODEL_PROBLEMS = {
    "429": "The model provider is rate limiting (`LLM_RATE_LIMITED`, with `Retry-After` when known).",
    "502": "The model failed (`LLM_SERVER_ERROR`, `LLM_CLIENT_ERROR`), or twice answered something that "
           "is not what was asked for (`LLM_SERVER_ERROR`).",
}


def _query(name: str, description: str, type_: str = "string", required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": {"type": type_},
            "description": description}


USER_KEY = _query("userKey", "The end user the call acts for (or a bearer token).")
CONTEXT_KEY = _query("contextKey", "Another name for `userKey`, as @tambo-ai/typescript-sdk's beta methods send it.")
THREAD_ID = path_param("threadId", "The thread's id (`thr_…`).")
MESSAGE_ID = path_param("messageId", "An assistant message of the thread (`msg_…`).")


def _json(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _operation(operation_id: str, summary: str, parameters: list, ok: dict, *, body_ref: dict | None = None,
               model_call: bool = False) -> dict[str, Any]:
    responses = {"200": ok, **{status: problem(status) for status in ("400", "401", "404")}}
    if model_call:
        responses["413"] = problem("413")
        for status, description in _MODEL_PROBLEMS.items():
            responses[status] = {"description": description,
                                 "content": {PROBLEM_CONTENT_TYPE: {"schema": PROBLEM_REF}}}
    responses["500"] = problem("500")
    operation = {"operationId": operation_id, "summary": summary, "tags": ["threads"], "parameters": parameters,
                 "security": SECURITY, "responses": responses}
    if body_ref is not None:
        operation["requestBody"] = {"required": False, "content": {"application/json": {"schema": body_ref}}}
    return operation


def assist_paths(components: dict[str, Any]) -> dict[str, Any]:
    """Paths for generate-name and suggestions, /v1 and the SDK's older ones; adds their models."""
    named = add_model(components, wire.NamedThread)
    body = add_model(components, wire.CreateSuggestionsBody)
    page = add_model(components, wire.SuggestionPage)
    suggestion_list = {"type": "array", "items": add_model(components, wire.Suggestion)}
    paging = [USER_KEY, _query("limit", "Page size, 1..100 (default 10).", "integer"),
              _query("cursor", "Opaque cursor from the previous page's nextCursor.")]
    generate_summary = ("Generate suggested next user messages for an assistant message, replacing its "
                        "earlier ones")
    return {
        "/threads/{threadId}/generate-name": {"post": _operation(
            "threadsGenerateName", "Name the thread from its conversation (one short model call)",
            [THREAD_ID, USER_KEY, CONTEXT_KEY], _json("The thread, with its new `name`.", named),
            model_call=True)},
        "/v1/threads/{threadId}/messages/{messageId}/suggestions": {
            "post": _operation("threadsSuggestionsCreate", generate_summary, [THREAD_ID, MESSAGE_ID],
                               _json("The new suggestions.", page), body_ref=body, model_call=True),
            "get": _operation("threadsSuggestionsList", "List a message's suggestions",
                              [THREAD_ID, MESSAGE_ID, *paging], _json("One page of suggestions.", page)),
        },
        "/threads/{threadId}/messages/{messageId}/suggestions": {
            "post": _operation("threadsSuggestionsGenerateLegacy", generate_summary + " (the SDK's older path)",
                               [THREAD_ID, MESSAGE_ID, USER_KEY, CONTEXT_KEY],
                               _json("The new suggestions.", suggestion_list), body_ref=body, model_call=True),
            "get": _operation("threadsSuggestionsListLegacy", "List a message's suggestions (the SDK's older path)",
                              [THREAD_ID, MESSAGE_ID, USER_KEY, CONTEXT_KEY],
                              _json("All of the message's suggestions.", suggestion_list)),
        },
    }
