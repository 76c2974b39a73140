"""The older HTTP+SSE MCP transport (`transport: sse`), still what many hosted MCP servers speak: the same
listing, calls, headers and timeouts as streamable HTTP, against the real test server run over SSE."""
from __future__ import annotations

import asyncio

from tests.support.mcp_fixtures import mcp_sse_url  # noqa: F401 - fixture
from tests.tools.test_mcp_client import (SHUTDOWN_ALLOWANCE, TEST_SERVER_TOOLS, call_and_list_leftover_tasks,
                                         text_of)
from tools.mcp_client import McpServerConfig, call_tool, list_tools


def sse_config(url: str, **overrides) -> McpServerConfig:
    return McpServerConfig(**{"name": "legacy", "transport": "sse", "url": url, **overrides})


def test_it_lists_the_tools_of_an_sse_server(mcp_sse_url):  # noqa: F811
    tools = asyncio.run(list_tools(sse_config(mcp_sse_url), timeout=10))
    assert {tool.name for tool in tools} == TEST_SERVER_TOOLS


def test_it_calls_a_tool_over_sse_and_reports_a_failing_one(mcp_sse_url):  # noqa: F811
    result = asyncio.run(call_tool(sse_config(mcp_sse_url), "add", {"a": 40, "b": 2}, timeout=10))
    assert (result.content, result.is_error) == ([{"type": "text", "text": "42"}], False)
    failed = asyncio.run(call_tool(sse_config(mcp_sse_url), "fail", {}, timeout=10))
    assert failed.is_error and "this tool always fails" in text_of(failed)


def test_configured_headers_reach_the_sse_server(mcp_sse_url):  # noqa: F811
    config = sse_config(mcp_sse_url, headers={"X-Test-Token": "t0ken"})
    result = asyncio.run(call_tool(config, "header", {"name": "X-Test-Token"}, timeout=10))
    assert text_of(result) == "t0ken"


def test_a_hung_sse_call_returns_at_the_timeout_without_leaving_tasks(mcp_sse_url):  # noqa: F811
    result, elapsed, leftovers = asyncio.run(
        call_and_list_leftover_tasks(sse_config(mcp_sse_url), "hang", {}, timeout=1.5)
    )
    assert result.is_error
    assert text_of(result) == "The MCP server 'legacy' did not answer within 1.5 seconds."
    assert elapsed < 1.5 + SHUTDOWN_ALLOWANCE
    assert leftovers == []
