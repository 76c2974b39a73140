"""A real MCP server for the protocol-era tests, built on the `mcp` package's MCPServer.

`python tests/support/mcp_era_server.py --port N [--legacy] [--ttl-ms MS]` serves streamable HTTP at
http://127.0.0.1:N/mcp. By default it speaks the newest revision (2026-07-28: stateless, no
`Mcp-Session-Id`); with `--legacy` its `server/discover` names only handshake-era versions, so clients
fall back to a session-era connection (2025-11-25). With `--ttl-ms` its `tools/list` results say they
stay fresh that long (`ttlMs`, the 2026-07-28 caching hint; the package's default is 0).

Each `tools/list` and `tools/call` it receives is appended to `MCP_TEST_CALL_LOG` (when set) as a JSON
line with the method, the negotiated era, whether the request came on a session, the tool's name and
the request's raw `_meta`, so tests can count listings and read what a client sent.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult

from mcp_legacy import legacy_only  # a sibling: this file runs as a script


async def _log_requests(ctx: Any, call_next: Any) -> Any:
    path = os.environ.get("MCP_TEST_CALL_LOG")
    if path and ctx.method in ("tools/list", "tools/call"):
        params = dict(ctx.params or {})
        headers = getattr(ctx.request, "headers", None) or {}
        entry = {"method": ctx.method, "era": ctx.protocol_version, "name": params.get("name"),
                 "session": "mcp-session-id" in headers, "meta": params.get("_meta")}
        with open(path, "a") as log:
            log.write(json.dumps(entry) + "\n")
    return await call_next(ctx)


def build(ttl_ms: int | None) -> MCPServer:
    hints = {"tools/list": CacheHint(ttl_ms=ttl_ms)} if ttl_ms is not None else None
    server = MCPServer("tambo-era-server", log_level="WARNING", cache_hints=hints, middleware=[_log_requests])

    @server.tool(description="Name the protocol revision this call was made in.")
    def era(ctx: Context) -> str:
        return str(ctx.protocol_version)

    # Structured content only (no text content), of each JSON kind: any JSON value on 2026-07-28.
    @server.tool(description="Structured content only: an array.")
    def numbers() -> CallToolResult:
        return CallToolResult(content=[], structured_content=[1, 2, 3])

    @server.tool(description="Structured content only: a string.")
    def word() -> CallToolResult:
        return CallToolResult(content=[], structured_content="tosca")

    @server.tool(description="Structured content only: a number.")
    def count() -> CallToolResult:
        return CallToolResult(content=[], structured_content=42)

    @server.tool(description="Structured content only: an object.")
    def record() -> CallToolResult:
        return CallToolResult(content=[], structured_content={"seats": 2})

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--legacy", action="store_true")
    parser.add_argument("--ttl-ms", type=int, default=None)
    args = parser.parse_args()
    server = build(args.ttl_ms)
    if args.legacy:
        legacy_only(server)
    print("serving", file=sys.stderr)
    server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
