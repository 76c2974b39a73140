"""Reading one resource of a project's MCP server (`resources/read`), for a message part that names it.

A user message may carry `{type:"resource", resource:{uri:"@server:uri"}}` (what `@tambo-ai/react`'s
input sends for a resource picked from an MCP server); the server reads it once, before the message
is stored, so the stored part holds what the model reads (runs/attachments.py).
"""
from __future__ import annotations

import anyio
from mcp import MCPError
from mcp.types import BlobResourceContents

from tools.mcp_client import McpClientError, McpServerConfig, _connect, _timeout_message


def split_mcp_uri(uri: str) -> tuple[str, str]:
    """`@server:file:///a.txt` → (`server`, `file:///a.txt`)."""
    server, _, inner = uri[1:].partition(":")
    return server, inner


async def read_resource(config: McpServerConfig, uri: str, *, timeout: float) -> dict:
    """The resource's first contents as a Tambo resource (`uri`, `mimeType`, `text` or `blob`).

    Raises McpClientError (a safe message) when the server cannot be reached, does not answer in
    `timeout` seconds, refuses the read or answers with no contents.
    """
    try:
        with anyio.fail_after(timeout):
            async with _connect(config) as client:
                result = await client.read_resource(uri)
    except TimeoutError as exc:
        raise McpClientError(_timeout_message(config, timeout)) from exc
    except MCPError as exc:
        raise McpClientError(f"The MCP server {config.name!r} could not read {uri}: {exc.message}") from exc
    except Exception as exc:
        raise McpClientError(f"The MCP server {config.name!r} could not be reached.") from exc
    if not result.contents:
        raise McpClientError(f"The MCP server {config.name!r} has nothing at {uri}.")
    contents = result.contents[0]
    resource = {"uri": str(contents.uri), "mimeType": contents.mime_type or None}
    if isinstance(contents, BlobResourceContents):
        resource["blob"] = contents.blob
    else:
        resource["text"] = contents.text
    return {key: value for key, value in resource.items() if value is not None}
