"""`/mcp`: the project's MCP servers' prompts and resources as one MCP server, for the browser
(docs/tools.md#the-browsers-mcp-endpoint), as Tambo's hosted API had it.

`@tambo-ai/react`'s MCP provider reaches it with a 15-minute token from `POST /auth/mcp/access-token`
(`access_token_issue`, `access_token_read`): the token names the project, the end user and, when bound
to one, the thread; it is signed with the server's SECRET_KEY (Django's signing) and carries no
upstream credential. Each upstream server is reached as the run path reaches it (tools/mcp_client.py),
with the token's user's grant for a protected one: what a user may not call in a run, they cannot
list here either.

Stateless streamable HTTP: every JSON-RPC request is answered with one JSON response, no session id,
no server-to-client stream (GET answers 405, as the transport allows). A request whose
`MCP-Protocol-Version` header names a 2026-07-28-era revision (`server/discover`, then each request
in its own envelope) is served by the `mcp` package's own stateless StreamableHTTPSessionManager
(`modern_exchange`), over the same upstream calls. Prompt names and resource URIs are prefixed with
their server's name (`linear:summarise`, `linear:issue://42`), as Tambo's were.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from typing import Any

from django.conf import settings
from django.core import signing

log = logging.getLogger(__name__)

TOKEN_SECONDS = 15 * 60
_SALT = "tambo.mcp-access-token"
_HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
METHOD_NOT_FOUND, INVALID_PARAMS, INVALID_REQUEST = -32601, -32602, -32600


@dataclasses.dataclass(frozen=True)
class McpAccess:
    project_id: str
    user_key: str
    thread_id: str | None


def access_token_issue(access: McpAccess) -> dict[str, Any]:
    """The answer of `POST /auth/mcp/access-token` for `access` (the caller checked already)."""
    token = signing.dumps({"p": access.project_id, "u": access.user_key, "t": access.thread_id}, salt=_SALT,
                          compress=True)
    return {"mcpAccessToken": token, "expiresAt": int((time.time() + TOKEN_SECONDS) * 1000),
            "hasSession": access.thread_id is not None}


def access_token_read(token: str) -> McpAccess | None:
    """The access a token gives, or None for a forged, altered or expired one."""
    try:
        claims = signing.loads(token, salt=_SALT, max_age=TOKEN_SECONDS)
    except signing.BadSignature:
        return None
    return McpAccess(project_id=claims["p"], user_key=claims["u"], thread_id=claims.get("t"))


class RpcError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code, self.message = code, message


async def rpc_answer(message: Any, configs: list[Any]) -> dict[str, Any] | None:
    """The JSON-RPC response to one message from the browser (None for a notification)."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        return _error(None, INVALID_REQUEST, "A single JSON-RPC 2.0 request is expected.")
    if "id" not in message:
        return None  # notifications/initialized and the like: nothing to answer
    params = message.get("params") or {}
    try:
        result = await _dispatch(message["method"], params if isinstance(params, dict) else {}, configs)
    except RpcError as exc:
        return _error(message["id"], exc.code, exc.message)
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


async def _dispatch(method: str, params: dict[str, Any], configs: list[Any]) -> dict[str, Any]:
    if method == "initialize":
        asked = params.get("protocolVersion")
        return {"protocolVersion": asked if asked in _HANDSHAKE_VERSIONS else _HANDSHAKE_VERSIONS[-1],
                "capabilities": {"prompts": {}, "resources": {}} if configs else {},
                "serverInfo": {"name": "tambo-django", "version": "1.0.0"}}
    if method == "ping":
        return {}
    if method == "prompts/list":
        return {"prompts": await _gather(configs, _prompts_of)}
    if method == "resources/list":
        return {"resources": await _gather(configs, _resources_of)}
    if method == "resources/templates/list":
        return {"resourceTemplates": []}
    if method == "tools/list":
        # No tools here (the run path calls them), but @tambo-ai/react's provider lists the tools of
        # every server it connects to and logs an error on a refusal: an empty list is the truth.
        return {"tools": []}
    if method == "prompts/get":
        config, name = _named(configs, params.get("name"))
        arguments = params.get("arguments") or None
        return await _on(config, lambda client: client.get_prompt(name, arguments))
    if method == "resources/read":
        config, uri = _named(configs, params.get("uri"))
        return await _on(config, lambda client: client.read_resource(uri))
    raise RpcError(METHOD_NOT_FOUND, f"This server does not offer {method}.")


def _named(configs: list[Any], prefixed: Any) -> tuple[Any, str]:
    server, _, inner = str(prefixed or "").partition(":")
    config = next((c for c in configs if c.name == server), None)
    if config is None or not inner:
        raise RpcError(INVALID_PARAMS, "Name a prompt or resource as <server>:<name>, as listed.")
    return config, inner


async def _on(config: Any, job) -> dict[str, Any]:
    from mcp import MCPError

    from tools.mcp_client import _connect

    try:
        async with asyncio.timeout(settings.MCP_TIMEOUT):
            async with _connect(config) as client:
                result = await job(client)
    except MCPError as exc:
        raise RpcError(exc.code, exc.message) from exc
    except Exception as exc:
        log.warning("MCP server %s could not be reached through /mcp", config.name, exc_info=True)
        raise RpcError(-32603, f"The MCP server {config.name!r} could not be reached.") from exc
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def _gather(configs: list[Any], lister) -> list[dict[str, Any]]:
    listed = await asyncio.gather(*(_listed(config, lister) for config in configs))
    return [item for items in listed for item in items]


async def _listed(config: Any, lister) -> list[dict[str, Any]]:
    """One server's items, prefixed; a server that cannot be reached, or lists none, adds nothing."""
    try:
        return await lister(config)
    except RpcError:
        return []


async def _prompts_of(config: Any) -> list[dict[str, Any]]:
    result = await _on(config, lambda client: client.list_prompts())
    return [{**prompt, "name": f"{config.name}:{prompt['name']}"} for prompt in result.get("prompts", [])]


async def _resources_of(config: Any) -> list[dict[str, Any]]:
    result = await _on(config, lambda client: client.list_resources())
    return [{**resource, "uri": f"{config.name}:{resource['uri']}"} for resource in result.get("resources", [])]


def is_modern(protocol_header: str | None) -> bool:
    """Whether a request goes to the 2026-07-28 entry: the package's own rule (its StreamableHTTPSessionManager),
    any version header that is not a handshake-era one, so its classifier answers an unknown one."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    return protocol_header is not None and protocol_header not in HANDSHAKE_PROTOCOL_VERSIONS


async def modern_exchange(scope: dict[str, Any], body: bytes, configs: list[Any]) -> tuple[int, list, bytes]:
    """One 2026-07-28 request answered by the package's own stateless session manager (the envelope
    checks, `server/discover`, `resultType`, the `serverInfo` stamp, its error statuses), over a
    lowlevel Server whose handlers are this module's; returns (status, headers, body) for the view."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    manager = StreamableHTTPSessionManager(app=_modern_server(configs), stateless=True, json_response=True)
    answer: dict[str, Any] = {"status": 500, "headers": [], "body": b""}
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.Event().wait()  # only a disconnect comes after the body; none will
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer["status"], answer["headers"] = message["status"], message.get("headers", [])
        elif message["type"] == "http.response.body":
            answer["body"] += message.get("body", b"")

    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return answer["status"], answer["headers"], answer["body"]


def _modern_server(configs: list[Any]):
    """The package's lowlevel Server over `_dispatch`: its `server/discover` derives the capabilities
    from the handlers given here, as for any server built with the package."""
    from mcp import MCPError
    from mcp.server.caching import CACHEABLE_METHODS, CacheHint
    from mcp.server.lowlevel import Server

    def handler(method: str):
        async def handle(ctx: Any, params: Any) -> dict[str, Any]:
            given = params.model_dump(mode="json", by_alias=True, exclude_none=True) if params is not None else {}
            try:
                result = await _dispatch(method, given, configs)
            except RpcError as exc:
                raise MCPError(code=exc.code, message=exc.message) from exc
            return _as_ours(result)
        return handle

    return Server("tambo-django", version="1.0.0",
                  on_list_prompts=handler("prompts/list"), on_get_prompt=handler("prompts/get"),
                  on_list_resources=handler("resources/list"), on_read_resource=handler("resources/read"),
                  on_list_resource_templates=handler("resources/templates/list"),
                  on_list_tools=handler("tools/list"),
                  # 2026-07-28 lists carry freshness hints: these are the token's user's (private) and
                  # read from the upstream servers at every request (stale at once).
                  cache_hints={method: CacheHint(ttl_ms=0, scope="private") for method in CACHEABLE_METHODS})


def _as_ours(result: dict[str, Any]) -> dict[str, Any]:
    """An upstream result as this server's 2026-07-28 answer: the upstream's own envelope (its era's
    `resultType`, freshness hints made for its callers, its `serverInfo` stamp) gives way to ours."""
    from mcp_types import SERVER_INFO_META_KEY

    answer = {key: value for key, value in result.items() if key not in ("resultType", "ttlMs", "cacheScope", "_meta")}
    meta = {key: value for key, value in (result.get("_meta") or {}).items() if key != SERVER_INFO_META_KEY}
    return {**answer, **({"_meta": meta} if meta else {}), "resultType": "complete"}


def configs_for(configs: list[Any], user_key: str) -> list[Any]:
    """The project's servers as the token's user reaches them: a user server with that user's grant."""
    return [dataclasses.replace(c, user_key=user_key) if c.auth == "user" else c for c in configs]
