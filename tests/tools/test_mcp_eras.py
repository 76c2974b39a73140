"""Both MCP protocol eras (docs/tools.md#tool-lists-and-protocol-eras), against the real era test server
(tests/support/mcp_era_server.py) over streamable HTTP on loopback: a 2026-07-28 (stateless) one and a
session-era one, each appending the listings and calls it receives to a log the tests read.
"""
from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.mcp_fixtures import running_era_mcp_server
from tools.mcp_client import McpServerConfig
from tools.mcp_tool_cache import MAX_SERVER_TTL, MIN_SERVER_TTL, McpToolCache

DAY_MS = 24 * 3600 * 1000


@pytest.fixture(scope="module")
def logs() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder)


def requests_in(log: Path, method: str) -> list[dict]:
    if not log.exists():
        return []
    return [entry for line in log.read_text().splitlines() if (entry := json.loads(line))["method"] == method]


def config_of(url: str, name: str = "era") -> McpServerConfig:
    return McpServerConfig(name=name, transport="http", url=url)


# --- ttlMs and the tool-list cache ----------------------------------------------------------------------


def listings_at(url: str, log: Path, offsets: list[float]) -> list[int]:
    """Asks a cache (the production lister: the server's kept session) for the tools at each of `offsets`
    seconds on its clock; returns how many listings the server had received after each."""
    from tools.mcp_sessions import McpSessions

    now = [1000.0]
    counts = []

    async def main():
        kept = McpSessions(idle_timeout=60)
        cache = McpToolCache(ttl=30.0, timeout=30, clock=lambda: now[0], lister=kept.list_tools)
        try:
            for offset in offsets:
                now[0] = 1000.0 + offset
                tools = await cache.get(config_of(url))
                assert tools is not None and {tool.name for tool in tools} >= {"era"}
                counts.append(len(requests_in(log, "tools/list")))
        finally:
            await kept.aclose()

    asyncio.run(main())
    return counts


@pytest.mark.parametrize(("ttl_ms", "fresh_for"), [
    (12000, 12.0),  # the server's own ttl
    (0, MIN_SERVER_TTL),  # "immediately stale" (the package's default): kept for the floor
    (10 * DAY_MS, MAX_SERVER_TTL),  # more than the ceiling: kept for the ceiling
])
def test_a_2026_server_s_ttl_ms_decides_when_its_tool_list_is_fetched_again(logs, ttl_ms, fresh_for):
    log = logs / f"modern-{ttl_ms}.jsonl"
    with running_era_mcp_server(ttl_ms=ttl_ms, call_log=str(log)) as url:
        counts = listings_at(url, log, [0.0, fresh_for - 0.1, fresh_for + 0.1, 2 * fresh_for])
    assert counts == [1, 1, 2, 2]
    assert all(entry["era"] == "2026-07-28" for entry in requests_in(log, "tools/list"))


def test_a_session_era_server_s_list_is_kept_for_the_configured_ttl(logs):
    # The server is told to send a ttl of 12 s; on a session-era connection the hint does not count.
    log = logs / "legacy.jsonl"
    with running_era_mcp_server(legacy=True, ttl_ms=12000, call_log=str(log)) as url:
        counts = listings_at(url, log, [0.0, 12.1, 29.9, 30.1])
    assert counts == [1, 1, 1, 2]
    assert all(entry["era"] != "2026-07-28" for entry in requests_in(log, "tools/list"))
