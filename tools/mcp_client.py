"""Listing and calling the tools of MCP servers (docs/protocol.md#the-event-stream, server tools).

Django-free: the advance loop passes an `McpServerConfig` and gets plain dataclasses back.

Every call opens a fresh connection (spawns the stdio server, or opens a streamable HTTP session),
does its one job and closes it. That costs a handshake per call but leaves no state to go stale
between runs or processes. The timeout covers connect, handshake and the request itself (for a
stdio server that includes starting its process). When it expires the connection is torn down
before the function returns: the `mcp` package's stdio transport closes the server's stdin and,
if the server does not exit within 2 s, terminates and then kills its process group. So a call
returns at most a few seconds after its timeout, and leaves no process or task behind.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (CONNECTION_CLOSED, AudioContent, BlobResourceContents, CallToolResult,
                       EmbeddedResource, ImageContent, ResourceLink, TextContent)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tools.mcp_input import MAX_INPUT_ROUNDS, Asker, InputRequest, refuse_elicitation
from tools.mcp_oauth import authorization_required_in

__all__ = [
    "McpClientError",
    "McpResult",
    "McpServerConfig",
    "McpTool",
    "McpToolList",
    "call_tool",
    "list_tools",
    "listing_outcome",
    "tools_of",
]

logger = logging.getLogger(__name__)

Pairs = tuple[tuple[str, str], ...]

# A server that paginates forever must not hang a listing.
_MAX_TOOL_PAGES = 50


class McpClientError(Exception):
    """The MCP server could not be reached, did not answer in time, or broke the protocol.

    The message is safe to show; the underlying exception is the `__cause__`.
    """


def _pairs(value: Mapping[str, str] | Pairs | None) -> Pairs | None:
    if value is None:
        return None
    items = value.items() if isinstance(value, Mapping) else value
    return tuple(sorted((str(k), str(v)) for k, v in items))


@dataclass(frozen=True)
class McpServerConfig:
    """How to reach one MCP server. Hashable, so it can key a cache.

    `env` and `headers` accept a mapping and are stored as sorted (name, value) pairs. They are
    left out of the repr because they typically carry credentials.
    """

    name: str  # the server's name, used as the prefix of its tools' names
    transport: Literal["stdio", "http", "sse"]
    command: str | None = None  # stdio
    args: tuple[str, ...] = ()  # stdio
    env: Pairs | None = field(default=None, repr=False)  # stdio: merged over a minimal safe environment
    url: str | None = None  # http: the streamable HTTP endpoint
    headers: Pairs | None = field(default=None, repr=False)  # http
    # OAuth (docs/tools.md#protected-mcp-servers): "project" or "user" (http and sse only); the grant
    # used is the vault's for (server_id, user_key), user_key "" being the project's. A config per
    # user keys its own tool list and connection: one user's grant never serves another's call.
    auth: Literal["none", "project", "user"] = "none"
    server_id: int | None = None
    user_key: str = ""
    oauth_scopes: str = ""
    oauth_client_id: str = ""
    oauth_client_secret: str = field(default="", repr=False)  # as stored: encrypted or env:NAME

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "env", _pairs(self.env))
        object.__setattr__(self, "headers", _pairs(self.headers))
        if self.transport == "stdio":
            if not self.command:
                raise ValueError(f"MCP server {self.name!r}: the stdio transport needs a command.")
        elif self.transport in ("http", "sse"):
            if not self.url:
                raise ValueError(f"MCP server {self.name!r}: the {self.transport} transport needs a url.")
        else:
            raise ValueError(f"MCP server {self.name!r}: unknown transport {self.transport!r}.")
        if self.auth != "none" and (self.transport == "stdio" or self.server_id is None):
            raise ValueError(f"MCP server {self.name!r}: OAuth needs an HTTP transport and a stored server.")


@dataclass(frozen=True)
class McpTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    # The server says calling it twice is harmless (its readOnlyHint or idempotentHint annotation):
    # only then does a takeover run it again (docs/tools.md#safe-to-repeat).
    repeatable: bool = False


class McpToolList(list[McpTool]):
    """A server's tools, and for how many seconds the server says the list stays fresh (`ttl`): its
    `ttlMs` on a 2026-07-28 connection; None when it said nothing (a session-era server)."""

    ttl: float | None = None


@dataclass(frozen=True)
class McpResult:
    """A tool result as Tambo content blocks (`text` and `resource`, docs/protocol.md#endpoints)."""

    content: list[dict[str, Any]]
    is_error: bool = False
    timed_out: bool = False  # counted against the run's step budget (runs/loop.py)
    # The tool asked for the user's input (an elicitation, or `input_required`): the run pauses and the
    # call is made again with the answer (tools/mcp_input.py); `content` is empty then.
    input_request: InputRequest | None = None


async def list_tools(config: McpServerConfig, *, timeout: float) -> McpToolList:
    """Return the server's tools, following pagination, on a connection of its own.

    Raises McpClientError when the server cannot be reached, does not answer within `timeout`
    seconds (connect and handshake included), or answers with a protocol error.
    """

    async def listing() -> McpToolList:
        async with _connect(config) as client:
            return await tools_of(client)

    return await listing_outcome(config, listing, timeout=timeout)


async def tools_of(client: Client) -> McpToolList:
    """Every tool a connected server offers, following pagination, with the server's `ttlMs` (the
    least of its pages': a list is as fresh as its stalest page)."""
    tools = McpToolList()
    # As the package's own response cache: the hint counts only on a 2026-07-28 connection (a session-era
    # peer may put the key on the wire too), and only when the server sent it (the model's default is 0).
    modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
    ttl_ms: int | None = None
    cursor: str | None = None
    for _ in range(_MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(
            McpTool(name=t.name, description=t.description or "", input_schema=dict(t.input_schema),
                    repeatable=bool(t.annotations and (t.annotations.readOnlyHint or t.annotations.idempotentHint)))
            for t in page.tools
        )
        if modern and "ttl_ms" in page.model_fields_set:
            ttl_ms = page.ttl_ms if ttl_ms is None else min(ttl_ms, page.ttl_ms)
        cursor = page.next_cursor
        if not cursor:
            break
    tools.ttl = None if ttl_ms is None else ttl_ms / 1000
    return tools


async def listing_outcome(config: McpServerConfig, listing: Callable[[], Awaitable[McpToolList]], *,
                          timeout: float, on_timeout: Callable[[], None] | None = None) -> McpToolList:
    """Awaits `listing()` for at most `timeout` seconds; every failure becomes an McpClientError with a
    safe message (the cause chained). `on_timeout` runs on a timeout."""
    try:
        with anyio.fail_after(timeout):
            return await listing()
    except TimeoutError as exc:
        if on_timeout is not None:
            on_timeout()
        raise McpClientError(_timeout_message(config, timeout)) from exc
    except MCPError as exc:
        raise McpClientError(f"The MCP server {config.name!r} refused to list its tools: {exc.message}") from exc
    except Exception as exc:
        raise McpClientError(f"The MCP server {config.name!r} could not be reached.") from exc


async def call_tool(
    config: McpServerConfig, tool_name: str, arguments: dict[str, Any], *, timeout: float,
    answers: list[dict[str, Any]] | None = None,
) -> McpResult:
    """Call one tool on a connection of its own. Never raises for a failure of the server or the tool
    (see `call_outcome`). `answers` answer the tool's requests for input, in order (tools/mcp_input.py)."""
    asker = Asker(answers=list(answers or ()))

    async def call() -> Any:
        async with _connect(config, elicitation=asker.callback) as client:
            return await client.call_tool(tool_name, arguments)

    return await call_outcome(config, tool_name, call, timeout=timeout, asker=asker)


async def call_outcome(config: McpServerConfig, tool_name: str, call: Callable[[], Awaitable[Any]], *,
                       timeout: float, on_timeout: Callable[[], None] | None = None,
                       asker: Asker | None = None) -> McpResult:
    """See `_call_outcome`; and a call whose tool asked for input that `asker` had no answer for is an
    McpResult with that `input_request` instead, whatever the server made of the refusal."""
    async def asked_call() -> Any:
        try:
            return await call()
        except Exception:
            if asker is None or asker.request is None:
                raise
            # The server's answer to the refused elicitation (its tool failing, say) is expected.
            return CallToolResult(content=[])

    result = await _call_outcome(config, tool_name, asked_call, timeout=timeout, on_timeout=on_timeout)
    if asker is None or asker.request is None or result.timed_out:
        return result
    if len(asker.answers) >= MAX_INPUT_ROUNDS:
        return _error_result(f"The MCP tool {tool_name!r} on {config.name!r} asked for input more than "
                             f"{MAX_INPUT_ROUNDS} times in one call.")
    return McpResult(content=[], input_request=asker.request)


async def _call_outcome(config: McpServerConfig, tool_name: str, call: Callable[[], Awaitable[Any]], *,
                        timeout: float, on_timeout: Callable[[], None] | None = None) -> McpResult:
    """Awaits `call()` (a tool call on `config`'s server) for at most `timeout` seconds, and makes
    whatever came of it a result. Never raises for a failure of the server or the tool.

    A tool error, a protocol error, an unreachable server or a timeout all become an
    `McpResult(is_error=True)` whose text the model may read: it names the server and the
    failure, never local exception text. The details go to the log. `on_timeout` runs on a timeout
    (a kept session restarts a server that hangs).
    """
    try:
        with anyio.fail_after(timeout):
            result = await call()
    except TimeoutError:
        if on_timeout is not None:
            on_timeout()
        logger.warning("MCP tool %r on server %r timed out after %ss", tool_name, config.name, timeout)
        return McpResult(content=[{"type": "text", "text": _timeout_message(config, timeout)}], is_error=True,
                         timed_out=True)
    except MCPError as exc:
        if exc.code == CONNECTION_CLOSED:
            logger.warning("MCP server %r closed the connection during %r", config.name, tool_name)
            return _error_result(f"The MCP server {config.name!r} could not be reached.")
        logger.warning("MCP tool %r on server %r: protocol error %s", tool_name, config.name, exc.code)
        return _error_result(f"The MCP server {config.name!r} rejected the call to {tool_name!r}: {exc.message}")
    except Exception as exc:
        if authorization_required_in(exc) is not None:
            logger.warning("MCP tool %r on server %r: the grant was refused", tool_name, config.name)
            return _error_result(f"The MCP server {config.name!r} needs the user's authorisation (again) for "
                                 f"{tool_name!r}; they are asked for it on their next message.")
        logger.warning("MCP tool %r on server %r failed", tool_name, config.name, exc_info=True)
        return _error_result(f"The MCP server {config.name!r} could not be reached.")
    return McpResult(content=content_blocks(result), is_error=bool(result.is_error))


def content_blocks(result: CallToolResult) -> list[dict[str, Any]]:
    """Map an MCP tool result's content to Tambo content blocks."""
    blocks = [block for item in result.content if (block := _content_block(item)) is not None]
    if not blocks and result.structured_content is not None:
        # A tool may answer with structured content only; the model still needs to see it.
        blocks.append({"type": "text", "text": json.dumps(result.structured_content)})
    return blocks


def _content_block(item: Any) -> dict[str, Any] | None:
    if isinstance(item, TextContent):
        return {"type": "text", "text": item.text}
    if isinstance(item, ImageContent | AudioContent):
        return {"type": "resource", "resource": {"mimeType": item.mime_type, "blob": item.data}}
    if isinstance(item, EmbeddedResource):
        contents = item.resource
        resource: dict[str, Any] = {"uri": str(contents.uri)}
        if contents.mime_type:
            resource["mimeType"] = contents.mime_type
        if isinstance(contents, BlobResourceContents):
            resource["blob"] = contents.blob
        else:
            resource["text"] = contents.text
        return {"type": "resource", "resource": resource}
    if isinstance(item, ResourceLink):
        link: dict[str, Any] = {"uri": str(item.uri), "name": item.name}
        if item.description:
            link["description"] = item.description
        if item.mime_type:
            link["mimeType"] = item.mime_type
        return {"type": "resource", "resource": link}
    logger.info("Dropping MCP content of unsupported type %r", getattr(item, "type", type(item).__name__))
    return None


@asynccontextmanager
async def _connect(config: McpServerConfig, auth: httpx2.Auth | None = None, *,
                   elicitation: Callable[..., Awaitable[Any]] | None = None) -> AsyncIterator[Client]:
    """A connected client. A server behind OAuth gets `auth`, or else the vault's grant for the config's
    user that starts no authorisation (tools/mcp_vault.py: a lost grant raises AuthorizationRequired).
    `elicitation` answers the server's requests for input (tools/mcp_input.py); without one they are
    refused, but the client still says it can answer them, so a tool that asks can be paused and retried."""
    if auth is None and config.auth != "none":
        from tools.mcp_vault import vault_auth  # the vault is Django's; only OAuth servers need it

        auth = vault_auth(config, interactive=False)
    async with AsyncExitStack() as stack:
        target: Any
        if config.transport == "stdio":
            assert config.command is not None  # checked by McpServerConfig
            target = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=dict(config.env) if config.env else None,
            )
        elif config.transport == "sse":
            assert config.url is not None  # checked by McpServerConfig
            # The older HTTP+SSE transport: a GET stream for the server's messages and POSTs to the endpoint
            # it names. As below, the caller's timeout bounds the exchange, not the transport's own.
            target = sse_client(config.url, headers=dict(config.headers or ()), timeout=300.0, sse_read_timeout=300.0,
                                auth=auth)
        else:
            assert config.url is not None  # checked by McpServerConfig
            # The caller's timeout bounds the whole exchange; the HTTP client's own timeouts only
            # need to be no shorter than any sensible value of it.
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=dict(config.headers or ()), timeout=httpx2.Timeout(300.0), auth=auth)
            )
            target = streamable_http_client(config.url, http_client=http)
        # The SDK's response cache would outlive nothing here: every connection is fresh.
        client = await stack.enter_async_context(
            Client(target, cache=None, elicitation_callback=elicitation or refuse_elicitation))
        yield client


def _timeout_message(config: McpServerConfig, timeout: float) -> str:
    return f"The MCP server {config.name!r} did not answer within {timeout:g} seconds."


def _error_result(message: str) -> McpResult:
    return McpResult(content=[{"type": "text", "text": message}], is_error=True)
