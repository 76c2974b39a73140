"""OAuth 2.1 for protected MCP servers, on the `mcp` package's client (docs/tools.md#protected-mcp-servers).

The SDK's `OAuthClientProvider` does the protocol: protected resource metadata (RFC 9728) and
authorization server metadata discovery, the metadata's issuer check, a client ID metadata document
or dynamic registration, PKCE, `resource` (RFC 8707), refresh, and the step-up on a 403
`insufficient_scope` challenge. It expects the person who authorises to be at hand: it calls a
redirect handler and then waits for the callback. A server is never at hand like that, so the flow is
cut in two where it would wait:

- `PausingOAuthProvider._perform_authorization_code_grant` builds the authorization URL, hands the
  flow's secrets (the PKCE verifier, the discovered metadata, the client) to the store, and raises
  `AuthorizationRequired(url)`. The caller shows the URL (the admin redirects the operator, a run pauses
  with an event carrying it) and gives up the connection.
- `authorization_finish` runs in the callback: it checks the `iss` of the answer (RFC 9207) against the
  metadata saved with the flow and exchanges the code with the saved verifier, through the same SDK.

Django-free: the store (tools/mcp_vault.py) is passed in. Tokens are read from it and written to it
only; they are never logged, put in an exception's message or handed to a caller.
"""
from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode

import httpx2
from mcp.client.auth import OAuthClientProvider, PKCEParameters
from mcp.client.auth.utils import union_scopes, validate_authorization_response_iss
from mcp.shared.auth import (OAuthClientInformationFull, OAuthClientMetadata, OAuthMetadata, OAuthToken,
                             ProtectedResourceMetadata)

__all__ = ["AuthorizationRequired", "Grant", "GrantStore", "PausingOAuthProvider", "authorization_finish",
           "authorization_required_in"]


class _PausesAreNotErrors(logging.Filter):
    """The SDK logs whatever ends its flow as an error with a traceback; a pause for a person is the
    expected end here, said once by the caller."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], AuthorizationRequired))


class AuthorizationRequired(Exception):
    """The server needs an authorisation this process does not hold; `url` is where a person gives it
    (None when the flow was not started: a connection that must not start one)."""

    def __init__(self, server: str, url: str | None):
        super().__init__(f"The MCP server {server!r} needs an OAuth authorisation.")
        self.server = server
        self.url = url


@dataclass
class Grant:
    """What the vault holds for one (server, user): tokens, and their end of life (epoch seconds)."""

    tokens: OAuthToken | None = None
    expires_at: float | None = None
    client: OAuthClientInformationFull | None = None  # registered, or the operator's own
    # The discovery that led to the tokens: a refresh goes to that token endpoint with that `resource`.
    metadata: OAuthMetadata | None = None
    resource_metadata: ProtectedResourceMetadata | None = None


class GrantStore(Protocol):
    async def load(self) -> Grant: ...

    async def save_tokens(self, tokens: OAuthToken, expires_at: float | None, metadata: OAuthMetadata | None,
                          resource_metadata: ProtectedResourceMetadata | None) -> None: ...

    async def save_client(self, client: OAuthClientInformationFull) -> None: ...

    async def flow_begin(self, state: str, flow: dict[str, Any]) -> None:
        """Keep what the callback needs (the verifier and metadata: secrets) under `state`."""
        ...

    async def forget(self, wanted_scope: str | None) -> None:
        """Drop the grant's tokens: they were refused and could not be refreshed, or the server wants
        more scopes (`wanted_scope`, the union to ask for next time)."""
        ...


class _Storage:
    """The SDK's TokenStorage over a GrantStore, read once per connection."""

    def __init__(self, store: GrantStore):
        self.store = store
        self.grant: Grant | None = None
        self.context: Any = None  # the provider's OAuthContext, set by the provider

    async def _grant(self) -> Grant:
        if self.grant is None:
            self.grant = await self.store.load()
        return self.grant

    async def get_tokens(self) -> OAuthToken | None:
        return (await self._grant()).tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires_at = None if tokens.expires_in is None else _now() + tokens.expires_in
        await self.store.save_tokens(tokens, expires_at, self.context.oauth_metadata,
                                     self.context.protected_resource_metadata)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return (await self._grant()).client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self.store.save_client(client_info)


class PausingOAuthProvider(OAuthClientProvider):
    """The SDK's provider, but where it would wait for a person it raises AuthorizationRequired.

    `interactive=False` (tool calls and listings): no flow is started at all; a connection that finds
    its grant gone (revoked, refresh refused) fails with AuthorizationRequired(url=None)."""

    def __init__(self, *, name: str, url: str, store: GrantStore, redirect_url: str, scopes: str = "",
                 client_metadata_url: str | None = None, interactive: bool = True):
        metadata = OAuthClientMetadata(redirect_uris=[redirect_url], scope=scopes or None,
                                       client_name="tambo-django", grant_types=["authorization_code", "refresh_token"],
                                       token_endpoint_auth_method="none", application_type="web")
        storage = _Storage(store)
        super().__init__(url, metadata, storage, client_metadata_url=client_metadata_url)
        storage.context = self.context
        self.name = name
        self.store = store
        self.scopes = scopes
        self.interactive = interactive

    async def _initialize(self) -> None:
        await super()._initialize()
        # The SDK computes a token's end from `expires_in` when it receives it, not when it loads it:
        # a stored token would count as valid until the server refused it, and a refusal leads the SDK
        # to a new authorisation, not to a refresh. So the stored end is restored here.
        grant = self.context.storage.grant  # type: ignore[attr-defined]
        if grant is not None:
            self.context.token_expiry_time = grant.expires_at
            # And a refresh goes where the tokens came from (a provider's authorization server is often
            # not the MCP server's origin, the SDK's guess without discovery).
            self.context.oauth_metadata = self.context.oauth_metadata or grant.metadata
            self.context.protected_resource_metadata = (self.context.protected_resource_metadata
                                                        or grant.resource_metadata)

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        if not self.interactive:
            # A step-up (403 insufficient_scope) is where the SDK asks for scopes beyond the granted ones.
            tokens, wanted = self.context.current_tokens, self.context.client_metadata.scope
            step_up = bool(tokens and wanted and set(wanted.split()) - set((tokens.scope or "").split()))
            # The grant no longer works, or no longer suffices: the next run asks its user again, for
            # the scopes the SDK joined on a step-up.
            await self.store.forget(wanted if step_up else None)
            raise AuthorizationRequired(self.name, None)
        context = self.context
        assert context.client_info is not None and context.client_metadata.redirect_uris  # set by the SDK's flow
        pkce = PKCEParameters.generate()
        state = secrets.token_urlsafe(32)
        params = {
            "response_type": "code",
            "client_id": context.client_info.client_id,
            "redirect_uri": str(context.client_metadata.redirect_uris[0]),
            "state": state,
            "code_challenge": pkce.code_challenge,
            "code_challenge_method": "S256",
        }
        if context.should_include_resource_param(context.protocol_version):
            params["resource"] = context.get_resource_url()  # RFC 8707
        # The SDK picks the scopes the server names (its challenge, then its metadata); the operator's,
        # and those a step-up asked for before, are added to them.
        context.client_metadata.scope = union_scopes(context.client_metadata.scope, self.scopes or None)
        if context.client_metadata.scope:
            params["scope"] = context.client_metadata.scope
        endpoint = (str(context.oauth_metadata.authorization_endpoint) if context.oauth_metadata
                    else context.get_authorization_base_url(context.server_url) + "/authorize")
        await self.store.flow_begin(state, {
            "verifier": pkce.code_verifier,
            "scope": context.client_metadata.scope,
            "protocolVersion": context.protocol_version,
            "metadata": _dump(context.oauth_metadata),
            "resourceMetadata": _dump(context.protected_resource_metadata),
            "client": _dump(context.client_info),
        })
        raise AuthorizationRequired(self.name, f"{endpoint}?{urlencode(params)}")


async def authorization_finish(*, name: str, url: str, store: GrantStore, redirect_url: str, flow: dict[str, Any],
                               code: str, iss: str | None, timeout: float) -> None:
    """Completes a flow `PausingOAuthProvider` began: checks the answer's issuer and exchanges the code,
    storing the tokens through `store`. Raises the SDK's OAuthFlowError (a wrong `iss`) or
    OAuthTokenError (the exchange refused), and httpx2's errors when the server cannot be reached."""
    provider = PausingOAuthProvider(name=name, url=url, store=store, redirect_url=redirect_url,
                                    scopes=flow.get("scope") or "")
    context = provider.context
    context.protocol_version = flow.get("protocolVersion")
    context.oauth_metadata = OAuthMetadata.model_validate(flow["metadata"]) if flow.get("metadata") else None
    context.protected_resource_metadata = (ProtectedResourceMetadata.model_validate(flow["resourceMetadata"])
                                           if flow.get("resourceMetadata") else None)
    context.client_info = OAuthClientInformationFull.model_validate(flow["client"])
    validate_authorization_response_iss(iss, context.oauth_metadata)  # RFC 9207: a mix-up is refused
    # The SDK's own request and response handling (client authentication, `resource`, scope checks).
    request = await provider._exchange_token_authorization_code(code, flow["verifier"])
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(timeout)) as http:
        response = await http.send(request)
        await provider._handle_token_response(response)


def authorization_required_in(exc: BaseException) -> AuthorizationRequired | None:
    """The AuthorizationRequired inside `exc`: raised directly, chained, or in an exception group."""
    seen: set[int] = set()
    pending = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, AuthorizationRequired):
            return current
        pending += [e for e in (current.__cause__, current.__context__) if e is not None]
        pending += list(getattr(current, "exceptions", ()))
    return None


logging.getLogger("mcp.client.auth.oauth2").addFilter(_PausesAreNotErrors())


def _dump(model: Any) -> dict[str, Any] | None:
    return None if model is None else model.model_dump(mode="json", exclude_none=True)


def _now() -> float:
    import time

    return time.time()
