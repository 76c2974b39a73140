"""The vault of MCP OAuth grants, and the authorisation flows that fill it (docs/tools.md#protected-mcp-servers).

A grant belongs to (server, user key): the project's under the key "", an end user's under the user
key their threads carry (an API caller's userKey, `token:<sub>`, `login:<id>`). Tokens, registered
clients and flows in progress are stored encrypted with SECRETS_KEYS (projects/secrets.py); nothing
here logs them or returns them to a caller.

Every database call is a short one on the database threads (core/db.py `db_call`), made between the
HTTP requests of a flow: no connection is held while an authorization server or MCP server answers.
"""
from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken, ProtectedResourceMetadata

from core.db import db_call
from projects.secrets import secret_resolve, secret_store
from tools.mcp_client import McpServerConfig, _connect
from tools.mcp_oauth import Grant, PausingOAuthProvider, authorization_finish, authorization_required_in
from tools.models import McpAuthorization, McpServer, McpToken

log = logging.getLogger(__name__)


class FlowRefused(Exception):
    """A callback that names no flow in progress (unknown, used or expired state); the message is safe."""


def _dump(model: Any) -> dict[str, Any] | None:
    return None if model is None else model.model_dump(mode="json", exclude_none=True)


def _seal(data: dict[str, Any]) -> str:
    return secret_store(json.dumps(data)) or ""


def _open(text: str) -> dict[str, Any]:
    return json.loads(secret_resolve(text) or "{}")


class VaultStore:
    """The GrantStore of one (server, user key) (tools/mcp_oauth.py)."""

    def __init__(self, config: McpServerConfig):
        assert config.server_id is not None  # checked by McpServerConfig for OAuth servers
        self.config = config
        self.server_id = config.server_id
        self.user_key = config.user_key

    async def load(self) -> Grant:
        return await db_call(_grant_read, self.server_id, self.user_key, self._own_client())

    def _own_client(self) -> OAuthClientInformationFull | None:
        """The operator's own client (the provider's OAuth app), when the server names one."""
        if not self.config.oauth_client_id:
            return None
        secret = secret_resolve(self.config.oauth_client_secret) if self.config.oauth_client_secret else None
        return OAuthClientInformationFull(
            client_id=self.config.oauth_client_id, client_secret=secret,
            redirect_uris=[settings.MCP_OAUTH_REDIRECT_URL],
            token_endpoint_auth_method="client_secret_post" if secret else "none")

    async def save_tokens(self, tokens: OAuthToken, expires_at: float | None, metadata: OAuthMetadata | None,
                          resource_metadata: ProtectedResourceMetadata | None) -> None:
        sealed = {"tokens": _dump(tokens), "metadata": _dump(metadata), "resourceMetadata": _dump(resource_metadata)}
        await db_call(_tokens_write, self.server_id, self.user_key, sealed, tokens.scope or "", expires_at)

    async def save_client(self, client: OAuthClientInformationFull) -> None:
        if self.config.oauth_client_id:
            return  # the operator's own client is configured, not stored
        await db_call(_client_write, self.server_id, client)

    async def flow_begin(self, state: str, flow: dict[str, Any]) -> None:
        await db_call(_flow_write, self.server_id, self.user_key, state, flow)

    async def forget(self, wanted_scope: str | None) -> None:
        """The grant stopped working (revoked, refresh refused) or falls short (a step-up): its tokens
        go, so the next run asks again; for `wanted_scope` when given."""
        if wanted_scope:
            await db_call(_tokens_drop, self.server_id, self.user_key, wanted_scope)
        else:
            await db_call(grant_revoke, server_id=self.server_id, user_key=self.user_key)


def vault_auth(config: McpServerConfig, *, interactive: bool) -> PausingOAuthProvider:
    """The httpx auth of one connection to `config`'s server with the vault's grant for its user."""
    return PausingOAuthProvider(name=config.name, url=config.url or "", store=VaultStore(config),
                                redirect_url=settings.MCP_OAUTH_REDIRECT_URL, scopes=config.oauth_scopes,
                                client_metadata_url=settings.MCP_OAUTH_CLIENT_METADATA_URL, interactive=interactive)


async def authorization_start(config: McpServerConfig, *, timeout: float) -> str | None:
    """Starts an authorisation of `config`'s server for its user: discovery, registration, a stored
    flow. Returns the URL a person opens, or None when the server let us in without one (a grant the
    vault holds already). Raises AuthorizationRequired(url=None) only through a bug; any failure of the
    servers propagates (the caller decides what to tell whom)."""
    import anyio

    provider = vault_auth(config, interactive=True)
    try:
        with anyio.fail_after(timeout):
            async with _connect(config, auth=provider):
                return None
    except BaseException as exc:  # noqa: BLE001 - the SDK's transports wrap what the auth flow raised
        required = authorization_required_in(exc)
        if required is None or required.url is None:
            raise
        return required.url


async def authorization_callback(*, state: str, code: str, iss: str | None) -> McpServer:
    """Finishes the flow `state` names: the code exchanged, the grant stored. Returns the server.
    Raises FlowRefused (no such flow), or the SDK's OAuthFlowError/OAuthTokenError (a wrong `iss`, a
    refused exchange)."""
    found = await db_call(_flow_take, state)
    if found is None:
        raise FlowRefused("This authorisation is unknown, was used already or expired; start it again.")
    server, user_key, flow = found
    config = config_of(server, user_key=user_key)
    await authorization_finish(name=config.name, url=config.url or "", store=VaultStore(config),
                               redirect_url=settings.MCP_OAUTH_REDIRECT_URL, flow=flow, code=code, iss=iss,
                               timeout=settings.MCP_TIMEOUT)
    log.info("MCP server %s authorised for %s", server.name, "its project" if not user_key else "a user")
    return server


def config_of(server: McpServer, *, user_key: str = "") -> McpServerConfig:
    from tools.selectors import project_tools  # the one place a config is built from the columns

    row = type("Row", (), {"tools_enabled": [], "tools_mcp": [{f: getattr(server, f) for f in _FIELDS}]})
    return dataclasses.replace(project_tools(row).mcp_configs[0], user_key=user_key)


_FIELDS = ("id", "name", "transport", "command", "args", "env", "url", "headers", "auth", "oauth_scopes",
           "oauth_client_id", "oauth_client_secret")


# --- the run path ----------------------------------------------------------------------------------

@dataclasses.dataclass
class Grants:
    """The MCP servers a run may use (`configs`, each OAuth one bound to its grant's user), and the
    authorisations its user must give first (server name, URL)."""

    configs: list[McpServerConfig]
    needed: list[tuple[str, str]]


async def grants_check(configs: list[McpServerConfig], *, user_key: str, timeout: float) -> Grants:
    """Binds each OAuth server to its grant: the project's, or the run's user's. One statement reads
    which grants exist. A project's server without a grant is left out (the operator authorises it in
    the admin); a user's server without one is started an authorisation of (its URL in `needed`); a
    run without a user key cannot use user servers and leaves them out."""
    wanted = [c if c.auth != "user" else dataclasses.replace(c, user_key=user_key) for c in configs]
    oauth = [c for c in wanted if c.auth != "none" and not (c.auth == "user" and not user_key)]
    held, wanted_scopes = await db_call(_grants_held, [(c.server_id, c.user_key) for c in oauth]) if oauth else ({}, {})
    kept, needed = [], []
    for config in wanted:
        if config.auth == "none":
            kept.append(config)
        elif config.auth == "user" and not user_key:
            log.warning("MCP server %s needs a user's authorisation; a run without a userKey leaves it out", config.name)
        elif (config.server_id, config.user_key) in held:
            kept.append(config)
        elif config.auth == "project":
            log.warning("MCP server %s is not authorised for its project yet (the admin's Authorise); left out",
                        config.name)
        else:
            wanted = wanted_scopes.get((config.server_id, config.user_key))
            if wanted:  # a step-up: the scopes the server asked for, with the configured ones
                config = dataclasses.replace(config, oauth_scopes=f"{config.oauth_scopes} {wanted}".strip())
            try:
                url = await authorization_start(config, timeout=timeout)
            except Exception:  # noqa: BLE001 - an unreachable server is left out, as any other
                log.warning("MCP server %s: its authorisation could not be started; left out", config.name,
                            exc_info=True)
                continue
            if url is None:
                kept.append(config)
            else:
                needed.append((config.name, url))
    return Grants(kept, needed)


# --- database work (on the database threads) ------------------------------------------------------

def _grant_read(server_id: int, user_key: str, own_client: OAuthClientInformationFull | None) -> Grant:
    row = McpToken.objects.filter(server_id=server_id, user_key=user_key).values("tokens", "expires_at").first()
    grant = Grant()
    if row and row["tokens"]:
        sealed = _open(row["tokens"])
        grant.tokens = OAuthToken.model_validate(sealed["tokens"])
        grant.expires_at = row["expires_at"]
        if sealed.get("metadata"):
            grant.metadata = OAuthMetadata.model_validate(sealed["metadata"])
        if sealed.get("resourceMetadata"):
            grant.resource_metadata = ProtectedResourceMetadata.model_validate(sealed["resourceMetadata"])
    if own_client is not None:
        grant.client = own_client
    else:
        stored = McpServer.objects.filter(pk=server_id).values_list("oauth_client", flat=True).first()
        if stored:
            grant.client = OAuthClientInformationFull.model_validate(_open(stored))
    return grant


def _tokens_write(server_id: int, user_key: str, sealed: dict[str, Any], scope: str, expires_at: float | None) -> None:
    project_id = McpServer.objects.filter(pk=server_id).values_list("project_id", flat=True).first()
    if project_id is None:
        return  # the server was deleted meanwhile
    McpToken.objects.update_or_create(
        server_id=server_id, user_key=user_key,
        defaults={"project_id": project_id, "tokens": _seal(sealed), "scope": scope, "expires_at": expires_at})


def _client_write(server_id: int, client: OAuthClientInformationFull) -> None:
    McpServer.objects.filter(pk=server_id).update(oauth_client=_seal(_dump(client)))


def _flow_write(server_id: int, user_key: str, state: str, flow: dict[str, Any]) -> None:
    # Flows nobody finished are dropped here, with the next one: no job of their own.
    McpAuthorization.objects.filter(created_at__lt=_flow_cutoff()).delete()
    McpAuthorization.objects.create(state=state, server_id=server_id, user_key=user_key, flow=_seal(flow))


def _flow_take(state: str) -> tuple[McpServer, str, dict[str, Any]] | None:
    """The flow `state` names, deleted in the same transaction: a code is exchanged at most once."""
    with transaction.atomic():
        pending = (McpAuthorization.objects.select_for_update().select_related("server")
                   .filter(state=state, created_at__gte=_flow_cutoff()).first())
        if pending is None:
            return None
        pending.delete()
    return pending.server, pending.user_key, _open(pending.flow)


def _flow_cutoff():
    from datetime import timedelta

    from django.utils import timezone

    return timezone.now() - timedelta(seconds=settings.MCP_OAUTH_FLOW_SECONDS)


def _grants_held(pairs: list[tuple[int | None, str]]) -> tuple[set[tuple[int, str]], dict[tuple[int, str], str]]:
    """Which (server, user) pairs hold tokens, and the scopes a step-up wants for those that lost them."""
    from django.db.models import Q

    query = Q()
    for server_id, user_key in pairs:
        query |= Q(server_id=server_id, user_key=user_key)
    held, wanted = set(), {}
    for server_id, user_key, tokens, scope in McpToken.objects.filter(query).values_list(
            "server_id", "user_key", "tokens", "scope"):
        if tokens:
            held.add((server_id, user_key))
        else:
            wanted[(server_id, user_key)] = scope
    return held, wanted


def _tokens_drop(server_id: int, user_key: str, wanted_scope: str) -> None:
    McpToken.objects.filter(server_id=server_id, user_key=user_key).update(tokens="", scope=wanted_scope,
                                                                          expires_at=None)


def grant_revoke(*, server_id: int, user_key: str | None = None) -> int:
    """Deletes the server's grants: one user's (`user_key`, "" the project's) or, with None, every
    user's (the project's stays). Returns how many. The tokens are forgotten here; the provider's own
    record of them lapses with their expiry."""
    grants = McpToken.objects.filter(server_id=server_id)
    grants = grants.filter(user_key=user_key) if user_key is not None else grants.exclude(user_key="")
    return grants.delete()[0]


def user_grants_forget(*, project, user_key: str) -> int:
    """Deletes one end user's grants and unfinished authorisations on every MCP server of `project`
    (forgetting the user: retention/forget.py); returns how many rows went. The project's own grant
    (user key "") is never one user's."""
    if not user_key:
        return 0
    grants = McpToken.objects.filter(project=project, user_key=user_key)
    flows = McpAuthorization.objects.filter(server__project=project, user_key=user_key)
    return grants.delete()[0] + flows.delete()[0]


def flow_drop(state: str) -> None:
    """Forgets a flow the authorization server refused (the person said no)."""
    McpAuthorization.objects.filter(state=state).delete()
