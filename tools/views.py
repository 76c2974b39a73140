"""The routes of protected MCP servers' authorisation (docs/tools.md#protected-mcp-servers).

- `GET /mcp-auth/callback`: where authorization servers send the person back; finishes the flow and
  answers a small page (never a token).
- `GET /mcp-auth/start/{serverId}`: the admin's *Authorise* button for a project's server: starts a
  flow and sends the operator to the authorization server. Staff only.
- `DELETE /v1/mcp-servers/{serverName}/authorizations[?userKey=]`: revokes grants by API: one user's
  (a project key naming `userKey`, or a user token / page session for its own user), or every user's
  of the server (a project key without `userKey`).

Async views: the flows' requests to the servers run on the event loop, each database call on the
database threads (core/db.py), so no connection is held while a server answers.
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from core.db import db_call
from core.problems import Problem
from projects.auth import principal_resolve

log = logging.getLogger(__name__)


def _page(status: int, title: str, text: str) -> HttpResponse:
    body = format_html('<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{}</title></head>'
                       '<body><h1>{}</h1><p>{}</p></body></html>', title, title, text)
    return HttpResponse(body, status=status, content_type="text/html; charset=utf-8")


@require_GET
async def oauth_callback_view(request: HttpRequest) -> HttpResponse:
    from mcp.client.auth import OAuthFlowError

    from tools.mcp_vault import FlowRefused, authorization_callback, flow_drop

    state, code = request.GET.get("state", ""), request.GET.get("code", "")
    error = request.GET.get("error")
    if error:
        if state:
            await db_call(flow_drop, state)
        return _page(400, "Not authorised", f"The authorization server answered: {error[:200]}.")
    if not state or not code:
        return _page(400, "Not authorised", "The answer names no authorisation (state and code are required).")
    try:
        server = await authorization_callback(state=state, code=code, iss=request.GET.get("iss"))
    except FlowRefused as exc:
        return _page(400, "Not authorised", str(exc))
    except OAuthFlowError:
        log.warning("An MCP authorisation callback was refused", exc_info=True)
        return _page(400, "Not authorised", "The answer did not come from the authorization server the "
                                            "authorisation was started with.")
    except Exception:  # noqa: BLE001 - the page says what went wrong, the log the details
        log.warning("An MCP authorisation could not be finished", exc_info=True)
        return _page(502, "Not authorised", "The authorization server refused the code or could not be reached.")
    return _page(200, "Authorised", f"The MCP server {server.name} is authorised. You can close this window and "
                                    "go back to the app.")


@require_GET
async def oauth_start_view(request: HttpRequest, server_id: int) -> HttpResponse:
    from tools.mcp_vault import authorization_start

    try:
        config = await db_call(_staff_config, request, server_id)
    except Problem as problem:
        if problem.status == 401:
            return HttpResponseRedirect(f"{reverse('admin:login')}?next={request.path}")
        return _page(problem.status, "Not started", problem.detail)
    try:
        url = await authorization_start(config, timeout=settings.MCP_TIMEOUT)
    except Exception:  # noqa: BLE001 - the page says what went wrong, the log the details
        log.warning("The authorisation of MCP server %s could not be started", config.name, exc_info=True)
        return _page(502, "Not started", "The MCP server or its authorization server could not be reached, or "
                                         "refused the registration; see the server's log.")
    if url is None:  # the vault's grant works already
        return HttpResponseRedirect(reverse("admin:tools_mcpserver_change", args=[server_id]))
    return HttpResponseRedirect(url)


def _staff_config(request: HttpRequest, server_id: int):
    from tools.mcp_vault import config_of
    from tools.models import McpServer

    user = request.user
    if not user.is_authenticated:
        raise Problem(401, "UNAUTHORIZED", "Log in to the admin.")
    if not (user.is_active and user.is_staff and user.has_perm("tools.change_mcpserver")):
        raise Problem(403, "FORBIDDEN", "Only the admin's staff who may change MCP servers may authorise one.")
    server = McpServer.objects.filter(pk=server_id).first()
    if server is None or server.auth != McpServer.Auth.PROJECT:
        raise Problem(404, "NOT_FOUND", "No MCP server with the project's OAuth authorisation has this id.")
    return config_of(server)


@csrf_exempt  # principal_resolve checks a session's CSRF token itself, answering in this route's shape
@require_http_methods(["DELETE"])
async def grants_revoke_view(request: HttpRequest, server_name: str) -> HttpResponse:
    removed = await db_call(_revoke, request, server_name)
    return JsonResponse({"serverName": server_name, "revoked": removed})


def _revoke(request: HttpRequest, server_name: str) -> int:
    from tools.mcp_vault import grant_revoke
    from tools.models import McpServer

    principal = principal_resolve(request)
    server = McpServer.objects.filter(project=principal.project, name=server_name).first()
    if server is None:
        raise Problem(404, "NOT_FOUND", f"The project has no MCP server named {server_name!r}.")
    raw = request.GET.get("userKey")
    acts_for_itself = principal.token_user_key is not None or principal.session_user_key is not None
    if raw is None and not acts_for_itself:
        return grant_revoke(server_id=server.pk)  # every user's grant of the server
    return grant_revoke(server_id=server.pk, user_key=principal.user_key_checked(raw))
