"""A protected MCP server for tests: the `mcp` package's MCPServer behind its own OAuth authorization server.

Run as `python tests/support/mcp_oauth_server.py --port N`: the MCP endpoint is http://127.0.0.1:N/mcp
(streamable HTTP, scope `read` required), the authorization server is http://127.0.0.1:N (the
package's routes: metadata, `/authorize`, `/token`, `/register`, `/revoke`; the protected resource
metadata under `/.well-known/oauth-protected-resource/mcp`). Tokens are bound to the `resource` they
were asked for, and the server refuses others (`validate_token_resource`).

The person who authorises is simulated: `/authorize` sends the browser to `/consent?pending=ID`, and the
test adds `&user=NAME` to say who logs in there; consent then redirects to the client's redirect URI
with `code`, `state` and `iss` (RFC 9207). Test-only routes: `GET /stats` (what the server counted, and
every token it issued, so a test can look for them where they must not be), `POST /revoke-user?user=NAME`
(the provider revokes a user's tokens on its side).
"""
from __future__ import annotations

import argparse
import secrets
import time
from collections import Counter

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, AuthorizationCode, RefreshToken, construct_redirect_uri
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response

ACCESS_SECONDS = 3600


class Provider:
    """An in-memory authorization server (the package's OAuthAuthorizationServerProvider protocol)."""

    def __init__(self, issuer: str):
        self.issuer = issuer
        self.clients: dict = {}
        self.pending: dict = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.counts: Counter = Counter()
        self.calls: Counter = Counter()  # tool calls by the subject of the token that made them
        self.issued: list[str] = []  # every access and refresh token handed out

    async def get_client(self, client_id: str):
        return self.clients.get(client_id)

    async def register_client(self, client_info) -> None:
        self.counts["registrations"] += 1
        # Any registered client may ask for every scope this server knows (a step-up needs `write` later).
        self.clients[client_info.client_id] = client_info.model_copy(update={"scope": "read write"})

    async def authorize(self, client, params) -> str:
        self.counts["authorize"] += 1
        pending = secrets.token_urlsafe(16)
        self.pending[pending] = (client, params)
        return f"{self.issuer}/consent?pending={pending}"

    async def load_authorization_code(self, client, authorization_code: str):
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode) -> OAuthToken:
        self.counts["code_exchanges"] += 1
        self.codes.pop(authorization_code.code, None)
        return self._tokens(client.client_id, authorization_code.scopes, authorization_code.resource,
                            authorization_code.subject)

    async def load_refresh_token(self, client, refresh_token: str):
        token = self.refresh.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        self.counts["refreshes"] += 1
        self.refresh.pop(refresh_token.token, None)  # rotated: a refresh token works once
        return self._tokens(client.client_id, scopes or refresh_token.scopes, refresh_token.resource,
                            refresh_token.subject)

    async def load_access_token(self, token: str):
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _tokens(self, client_id: str, scopes: list[str], resource: str | None, subject: str | None) -> OAuthToken:
        access, refresh = "at-" + secrets.token_urlsafe(24), "rt-" + secrets.token_urlsafe(24)
        self.issued += [access, refresh]
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes, resource=resource,
                                          subject=subject, expires_at=int(time.time()) + ACCESS_SECONDS)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource,
                                             subject=subject)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=ACCESS_SECONDS,
                          refresh_token=refresh, scope=" ".join(scopes))


def build(port: int) -> MCPServer:
    base = f"http://127.0.0.1:{port}"
    provider = Provider(base)
    server = MCPServer(
        "tambo-protected-test-server", log_level="WARNING", auth_server_provider=provider,
        auth=AuthSettings(issuer_url=base, resource_server_url=f"{base}/mcp", validate_token_resource=True,
                          required_scopes=["read"],
                          client_registration_options=ClientRegistrationOptions(
                              enabled=True, valid_scopes=["read", "write"], default_scopes=["read"]),
                          revocation_options=RevocationOptions(enabled=True)))

    @server.tool(description="Say whose authorisation the call carries.")
    def whoami() -> str:
        subject = get_access_token().subject
        provider.calls[subject] += 1
        return f"you are {subject}"

    @server.tool(description="Write a note (needs the `write` scope).")
    def write_note() -> str:
        provider.calls[get_access_token().subject + ":write"] += 1
        return "noted"

    @server.resource("secret://mine", mime_type="text/plain", description="The caller's own note.")
    def mine() -> str:
        subject = get_access_token().subject
        provider.calls[subject + ":resource"] += 1
        return f"the note of {subject}"

    @server.custom_route("/consent", methods=["GET"])
    async def consent(request: Request) -> Response:
        found = provider.pending.pop(request.query_params.get("pending", ""), None)
        user = request.query_params.get("user")
        if found is None or not user:
            return PlainTextResponse("unknown consent, or no user named", status_code=400)
        client, params = found
        code = AuthorizationCode(
            code="code-" + secrets.token_urlsafe(16), scopes=params.scopes or ["read"], expires_at=time.time() + 300,
            client_id=client.client_id, code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource,
            subject=user)
        provider.codes[code.code] = code
        return RedirectResponse(construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state,
                                                       iss=base), status_code=302)

    @server.custom_route("/stats", methods=["GET"])
    async def stats(request: Request) -> Response:
        return JSONResponse({**provider.counts, "calls": dict(provider.calls), "issued": provider.issued,
                             "resources": sorted({t.resource or "" for t in provider.access.values()})})

    @server.custom_route("/revoke-user", methods=["POST"])
    async def revoke_user(request: Request) -> Response:
        user = request.query_params.get("user")
        for table in (provider.access, provider.refresh):
            for token in [t for t, v in table.items() if v.subject == user]:
                del table[token]
        return PlainTextResponse("revoked")

    return server


def step_up(app, provider: Provider, base: str):
    """Answers a call of `write_note` without the `write` scope with 403 insufficient_scope (a step-up
    challenge, as a provider does for an operation that needs more than the token grants)."""

    async def wrapped(scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/mcp":
            return await app(scope, receive, send)
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        auth = dict(scope["headers"]).get(b"authorization", b"").decode()
        token = provider.access.get(auth.removeprefix("Bearer "))
        if b'"write_note"' in body and token is not None and "write" not in token.scopes:
            challenge = (f'Bearer error="insufficient_scope", scope="read write", '
                         f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"')
            await send({"type": "http.response.start", "status": 403,
                        "headers": [(b"www-authenticate", challenge.encode()), (b"content-length", b"0")]})
            return await send({"type": "http.response.body", "body": b""})
        replayed = iter([{"type": "http.request", "body": body, "more_body": False}])

        async def replay():
            return next(replayed, None) or await receive()

        return await app(scope, replay, send)

    return wrapped


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args().port
    server = build(port)
    app = step_up(server.streamable_http_app(), server._auth_server_provider, f"http://127.0.0.1:{port}")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
