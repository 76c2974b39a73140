"""Kept MCP sessions (tools/mcp_sessions.py): one process per stdio server, reused; restarted
after a crash or a hang. Against the real test server (tests/support/mcp_server.py)."""
from __future__ import annotations

import asyncio
import os
import signal

from tests.support.mcp_fixtures import SERVER_SCRIPT, mcp_http_url, stdio_command  # noqa: F401 - fixture
from tests.support.processes import children_running
from tools.mcp_client import McpServerConfig
from tools.mcp_sessions import McpSessions


def stdio_config() -> McpServerConfig:
    command, args = stdio_command()
    return McpServerConfig(name="kept", transport="stdio", command=command, args=args)


def server_processes() -> list[int]:
    """Live processes running the test server under this test process."""
    return children_running(os.getpid(), SERVER_SCRIPT)


def text(result) -> str:
    return result.content[0]["text"]


def test_two_calls_reuse_one_server_process():
    async def main():
        kept = McpSessions(idle_timeout=30)
        first = await kept.call_tool(stdio_config(), "add", {"a": 1, "b": 2}, timeout=30)
        second = await kept.call_tool(stdio_config(), "echo", {"text": "again"}, timeout=30)
        processes = server_processes()
        kept.close_all()
        return first, second, processes

    first, second, processes = asyncio.run(main())
    assert (text(first), text(second)) == ("3", "again")
    assert len(processes) == 1


def test_a_crashed_server_is_started_again():
    async def main():
        kept = McpSessions(idle_timeout=30)
        await kept.call_tool(stdio_config(), "add", {"a": 1, "b": 1}, timeout=30)
        (crashed,) = server_processes()
        os.kill(crashed, signal.SIGKILL)
        # The call in flight when the crash is noticed may fail; the next one gets a new server.
        results = [await kept.call_tool(stdio_config(), "add", {"a": 2, "b": 2}, timeout=30) for _ in range(2)]
        processes = server_processes()
        kept.close_all()
        return crashed, results, processes

    crashed, results, processes = asyncio.run(main())
    assert not results[-1].is_error and text(results[-1]) == "4"
    assert len(processes) == 1 and processes[0] != crashed


def test_a_hung_call_times_out_and_the_next_call_gets_a_fresh_session():
    async def main():
        kept = McpSessions(idle_timeout=30)
        hung = await kept.call_tool(stdio_config(), "hang", {}, timeout=1)
        after = await kept.call_tool(stdio_config(), "add", {"a": 3, "b": 4}, timeout=30)
        kept.close_all()
        return hung, after

    hung, after = asyncio.run(main())
    assert hung.is_error and "did not answer" in text(hung)
    assert text(after) == "7"


def test_http_sessions_are_reused(mcp_http_url):  # noqa: F811
    async def main():
        kept = McpSessions(idle_timeout=30)
        config = McpServerConfig(name="remote", transport="http", url=mcp_http_url)
        results = [await kept.call_tool(config, "add", {"a": i, "b": 1}, timeout=30) for i in range(3)]
        sessions = len(kept._sessions)
        kept.close_all()
        return results, sessions

    results, sessions = asyncio.run(main())
    assert [text(r) for r in results] == ["1", "2", "3"] and sessions == 1
