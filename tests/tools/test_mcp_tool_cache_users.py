"""The tool-list cache keeps one entry per user of a server behind each user's OAuth grant; entries
of users gone quiet are pruned instead of kept for ever (tools/mcp_tool_cache.py)."""
from __future__ import annotations

import asyncio

from tools.mcp_client import McpServerConfig, McpTool
from tools.mcp_tool_cache import _PRUNE_ABOVE, McpToolCache


def test_expired_entries_of_many_users_are_pruned():
    now = [0.0]

    async def lister(config, timeout):
        return [McpTool("whoami", "", {"type": "object"})]

    def user(n: int) -> McpServerConfig:
        return McpServerConfig(name="secure", transport="http", url="https://mcp.example/mcp", auth="user",
                               server_id=1, user_key=f"user-{n}")

    async def scenario() -> int:
        cache = McpToolCache(ttl=30, clock=lambda: now[0], lister=lister)
        for n in range(_PRUNE_ABOVE + 1):
            await cache.get(user(n))
        now[0] = 60.0  # every entry above has expired
        await cache.get(user(-1))
        await cache.get(user(-2))
        return len(cache._entries)

    assert asyncio.run(scenario()) == 2
