"""The OpenAPI description of `DELETE /v1/users/{userKey}` (retention/views.py, a plain Django view that
drf-spectacular cannot see; tambo_project/openapi.py adds it to the document)."""
from __future__ import annotations

from typing import Any

from core.openapi import problem


SESSION_SCHEME = "AdminSession"
SESSION_DEFINITION = {"type": "apiKey", "in": "cookie", "name": "sessionid",
                      "description": "The admin's session (/admin/login/) of a staff user, with the CSRF token "
                                     "in `X-CSRFToken`. Project keys carry no admin scope."}
_COUNT = {"type": "integer", "minimum": 0}
_REMOVED = {"type": "object", "description": "What was removed; `threadsBusy`: threads kept because a live run "
                                             "holds them.",
            "properties": {name: _COUNT for name in ("threads", "messages", "suggestions", "runs", "runEvents",
                                                     "limitCounters", "memories", "mcpGrants", "usageRowsAnonymized",
                                                     "threadsBusy")}}


# Each answer's own meaning; the problem content is the same for all (core/openapi.py's `problem`).
_ERRORS = {
    "401": "No admin session (`UNAUTHORIZED`).",
    "403": "An API key or access token, a session user who is not staff with the permission to delete threads "
           "(`FORBIDDEN`), or no CSRF token (`CSRF_FAILED`).",
    "404": "No project of that name (`PROJECT_NOT_FOUND`).",
    "409": "Some of the user's threads have a live run (`RUN_ACTIVE`, with `removed`): everything else was "
           "removed; call again after the `Retry-After` header's seconds.",
}


def user_forget_path() -> dict[str, Any]:
    return {"/v1/users/{userKey}": {"delete": {
        "operationId": "user_forget",
        "summary": "Forget one end user of a project",
        "description": "Removes the user's threads with their messages and files, suggestions, runs, run events, "
                       "limit counters, memories and grants for protected MCP servers, and empties the user's name on their usage rows "
                       "(docs/operations.md#retention-and-deletion). For the admin's staff only.",
        "tags": ["users"],
        "security": [{SESSION_SCHEME: []}],
        "parameters": [
            {"name": "userKey", "in": "path", "required": True, "schema": {"type": "string"},
             "description": "The user as stored: a `userKey` as sent, `token:<sub>` for a token user, "
                            "`login:<id>` for a page login."},
            {"name": "project", "in": "query", "required": True, "schema": {"type": "string"},
             "description": "The project's name."}],
        "responses": {
            "200": {"description": "The user is forgotten.", "content": {"application/json": {"schema": {
                "type": "object", "properties": {"userKey": {"type": "string"}, "removed": _REMOVED}}}}},
            **{status: problem(status) for status in ("400", "503")},
            **{status: {**problem("409" if status == "409" else "400"), "description": description}
               for status, description in _ERRORS.items()},
        },
    }}}
