"""The OpenAPI description of `DELETE /v1/mcp-servers/{serverName}/authorizations` (tools/views.py, a plain
Django view that drf-spectacular cannot see; tambo_project/openapi.py adds it to the document)."""
from __future__ import annotations

from typing import Any

from core.openapi import SECURITY, problem


def mcp_grants_path() -> dict[str, Any]:
    return {"/v1/mcp-servers/{serverName}/authorizations": {"delete": {
        "operationId": "mcp_grants_revoke",
        "summary": "Revoke end users' OAuth grants of a protected MCP server",
        "description": "Forgets the tokens of one user's grant (`userKey`; a user token or the page's session "
                       "revokes its own user's only) or, with a project key and no `userKey`, every user's grant "
                       "of the server. The user is asked to authorise again on their next run "
                       "(docs/tools.md#protected-mcp-servers).",
        "tags": ["mcp"],
        "security": SECURITY,
        "parameters": [
            {"name": "serverName", "in": "path", "required": True, "schema": {"type": "string"},
             "description": "The MCP server's name in the project."},
            {"name": "userKey", "in": "query", "required": False, "schema": {"type": "string"},
             "description": "The end user whose grant goes."}],
        "responses": {
            "200": {"description": "How many grants were revoked.", "content": {"application/json": {"schema": {
                "type": "object", "properties": {"serverName": {"type": "string"},
                                                 "revoked": {"type": "integer", "minimum": 0}}}}}},
            "404": {**problem("404"), "description": "The project has no MCP server of that name (`NOT_FOUND`)."},
            "403": {**problem("401"), "description": "A browser origin the project does not allow "
                                                     "(`ORIGIN_NOT_ALLOWED`), or no CSRF token with a session."},
            **{status: problem(status) for status in ("400", "401", "503")},
        },
    }}}
