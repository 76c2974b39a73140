"""Shared by the test MCP servers run as scripts (mcp_elicit_server.py, mcp_era_server.py), which import
it as a sibling: a server that speaks the handshake era only."""
from __future__ import annotations

import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS


def legacy_only(server: MCPServer) -> None:
    """Answers `server/discover` with handshake-era versions only: clients fall back to `initialize`."""

    async def discover(ctx, params) -> types.DiscoverResult:
        return types.DiscoverResult(supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
                                    capabilities=server._lowlevel_server.get_capabilities(),
                                    instructions=None)

    server._lowlevel_server.add_request_handler("server/discover", types.RequestParams, discover)
