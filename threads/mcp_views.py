"""`POST /auth/mcp/access-token` and `/mcp`, as Tambo's API had them (docs/tools.md#the-browsers-mcp-endpoint).

Here, not in tools/, because a token bound to a thread checks the thread (threads sit above tools);
the MCP side is tools/mcp_gateway.py.

- `POST /auth/mcp/access-token` `{threadId?, contextKey?}` with the project key (or a user token):
  `{}` when the project has no MCP server; else `{mcpAccessToken, expiresAt, hasSession}`, a 15-minute
  token for the project, the end user (the thread's, the token's, or `contextKey`) and the thread.
- `POST /mcp` with `Authorization: Bearer <mcpAccessToken>`: JSON-RPC, one response per request; a
  2026-07-28-era request (its `MCP-Protocol-Version` header) goes to the `mcp` package's stateless
  session manager.
"""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from pydantic import Field

from clientsdk.wire import RequestModel
from core.db import db_call
from core.input_guard import request_json
from core.problems import Problem
from core.validation import parse_body
from projects.auth import principal_resolve
from threads.models import Thread


class AccessTokenBody(RequestModel):
    thread_id: str | None = Field(default=None, min_length=1, max_length=200)
    context_key: str | None = Field(default=None, min_length=1, max_length=300)


@csrf_exempt  # a session's CSRF token is checked by principal_resolve, answering in this route's shape
async def access_token_view(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        raise Problem(405, "METHOD_NOT_ALLOWED", "Use POST.")
    return JsonResponse(await db_call(_access_token, request), status=201)


def _access_token(request: HttpRequest) -> dict:
    from tools.mcp_gateway import McpAccess, access_token_issue
    from tools.models import McpServer

    principal = principal_resolve(request)
    body = parse_body(AccessTokenBody, request_json(request) or {})
    if not McpServer.objects.filter(project=principal.project, enabled=True).exists():
        return {}
    if body.thread_id is not None:
        thread = Thread.objects.filter(id=body.thread_id, project=principal.project).only("id", "user_key").first()
        acting = principal.token_user_key or principal.session_user_key
        if thread is None or (acting is not None and thread.user_key != acting):
            raise Problem(404, "THREAD_NOT_FOUND", "Thread not found.")
        access = McpAccess(project_id=principal.project.pk, user_key=thread.user_key, thread_id=thread.id)
    else:
        user_key = principal.token_user_key or principal.session_user_key
        if user_key is None:
            if body.context_key is None:
                raise Problem(400, "VALIDATION_ERROR", "Context key is required for sessionless tokens (provide "
                                                       "contextKey or use a user token).", field="contextKey")
            user_key = principal.user_key_checked(body.context_key)
        access = McpAccess(project_id=principal.project.pk, user_key=user_key, thread_id=None)
    return access_token_issue(access)


@csrf_exempt  # the bearer token is the only credential; no cookie is read
async def mcp_view(request: HttpRequest) -> HttpResponse:
    from tools.mcp_gateway import access_token_read, configs_for, is_modern, modern_exchange, rpc_answer
    from tools.selectors import project_tools_of

    if request.method != "POST":
        # No server-to-client stream and no session to end (the transport lets a server say so).
        return HttpResponse(status=405, headers={"Allow": "POST"})
    header = request.headers.get("Authorization", "")
    access = access_token_read(header[7:].strip()) if header[:7].lower() == "bearer " else None
    if access is None:
        raise Problem(401, "UNAUTHORIZED", "An MCP access token (POST /auth/mcp/access-token) is required, and "
                                           "lasts 15 minutes.")
    project = type("ProjectRef", (), {"pk": access.project_id})
    configs = configs_for((await db_call(project_tools_of, project)).mcp_configs, access.user_key)
    if is_modern(request.headers.get("MCP-Protocol-Version")):
        status, headers, body = await modern_exchange(_scope_of(request), request.body, configs)
        response = HttpResponse(body, status=status)
        for name, value in headers:
            if name.lower() != b"content-length":
                response[name.decode("latin-1")] = value.decode("latin-1")
        return response
    answer = await rpc_answer(request_json(request), configs)
    if answer is None:
        return HttpResponse(status=202)
    return JsonResponse(answer)


def _scope_of(request: HttpRequest) -> dict:
    """The ASGI scope the package's entry reads (method, path, headers) rebuilt from the request, so the
    same view serves under ASGI and the test client alike."""
    return {"type": "http", "method": request.method, "path": request.path, "query_string": b"",
            "scheme": request.scheme, "headers": [(name.lower().encode("latin-1"), value.encode("latin-1"))
                                                  for name, value in request.headers.items()]}
