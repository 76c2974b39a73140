"""The MCP client against a real MCP server (tests/support/mcp_server.py) over stdio and HTTP.

Starting the stdio server costs over a second (it imports the `mcp` package), so the stdio tests
are few and run their calls concurrently; the HTTP server is started once for the module.
"""

import asyncio
import base64
import logging
import os
import socket
import time
from pathlib import Path

import pytest
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ResourceLink,
    TextContent,
)

from tests.support.mcp_fixtures import free_port, mcp_http_url, stdio_command
from tools.mcp_client import (
    McpClientError,
    McpServerConfig,
    call_tool,
    content_blocks,
    list_tools,
)
from tools.mcp_tool_cache import McpToolCache

__all__ = ["mcp_http_url"]  # a fixture, used by name

# After a timeout the SDK's stdio transport gives the server 2 s to exit once its stdin closes,
# then 2 s more after SIGTERM before SIGKILL; add some slack for a loaded machine.
SHUTDOWN_ALLOWANCE = 6.5
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TEST_SERVER_TOOLS = {"add", "echo", "image", "document", "fail", "hang", "env_var", "header"}


def stdio_config(**overrides) -> McpServerConfig:
    command, args = stdio_command()
    return McpServerConfig(**{"name": "local", "transport": "stdio", "command": command, "args": args, **overrides})


def http_config(url: str, **overrides) -> McpServerConfig:
    return McpServerConfig(**{"name": "remote", "transport": "http", "url": url, **overrides})


def text_of(result) -> str:
    assert [block["type"] for block in result.content] == ["text"], result
    return result.content[0]["text"]


async def call_and_list_leftover_tasks(config, tool_name, arguments, *, timeout):
    """Call a tool; return the result, the seconds it took and the tasks it left running."""
    started = time.monotonic()
    result = await call_tool(config, tool_name, arguments, timeout=timeout)
    elapsed = time.monotonic() - started
    await asyncio.sleep(0.05)
    leftovers = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    return result, elapsed, leftovers


def live_children(marker: str) -> list[int]:
    """Pids of this process's children that are still running and whose command line has `marker`."""
    pids = []
    for stat_path in Path("/proc").glob("[0-9]*/stat"):
        try:
            stat = stat_path.read_text()
            cmdline = (stat_path.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # the process ended while we looked
        # The fields after the parenthesised command name: state, ppid, ...
        state, ppid = stat.rpartition(")")[2].split()[:2]
        if int(ppid) == os.getpid() and state != "Z" and marker in cmdline:
            pids.append(int(stat_path.parent.name))
    return pids


# --- configuration -------------------------------------------------------------------------


def test_config_needs_a_command_for_stdio_and_a_url_for_http():
    with pytest.raises(ValueError, match="needs a command"):
        McpServerConfig(name="s", transport="stdio")
    with pytest.raises(ValueError, match="needs a url"):
        McpServerConfig(name="s", transport="http")
    with pytest.raises(ValueError, match="unknown transport"):
        McpServerConfig(name="s", transport="websocket", url="ws://x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="the sse transport needs a url"):
        McpServerConfig(name="s", transport="sse")


def test_config_is_hashable_and_keeps_secrets_out_of_its_repr():
    config = http_config("http://x/mcp", headers={"Authorization": "Bearer s3cret", "A": "1"})
    same = http_config("http://x/mcp", headers=[("A", "1"), ("Authorization", "Bearer s3cret")])
    assert config.headers == (("A", "1"), ("Authorization", "Bearer s3cret"))
    assert config == same and hash(config) == hash(same)
    assert "s3cret" not in repr(config)
    assert "s3cret" not in repr(stdio_config(env={"TOKEN": "s3cret"}))


# --- content mapping -------------------------------------------------------------------------


def test_content_maps_to_tambo_blocks():
    result = CallToolResult(
        content=[
            TextContent(type="text", text="hi"),
            AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
            EmbeddedResource(
                type="resource",
                resource=BlobResourceContents(uri="file:///a.bin", mime_type="application/octet-stream", blob="AQI="),
            ),
            ResourceLink(type="resource_link", uri="https://example.com/r", name="r", description="a link"),
        ]
    )
    assert content_blocks(result) == [
        {"type": "text", "text": "hi"},
        {"type": "resource", "resource": {"mimeType": "audio/wav", "blob": "AAAA"}},
        {
            "type": "resource",
            "resource": {"uri": "file:///a.bin", "mimeType": "application/octet-stream", "blob": "AQI="},
        },
        {"type": "resource", "resource": {"uri": "https://example.com/r", "name": "r", "description": "a link"}},
    ]


def test_structured_content_alone_is_shown_as_json_text():
    result = CallToolResult(content=[], structured_content={"total": 3})
    assert content_blocks(result) == [{"type": "text", "text": '{"total": 3}'}]


# --- stdio ---------------------------------------------------------------------------------


def test_it_lists_and_calls_tools_over_stdio():
    config = stdio_config(env={"TAMBO_MCP_TEST": "from the config"})

    async def sessions():
        # Each runs its own server process; concurrently, to keep the test short.
        return await asyncio.gather(
            list_tools(config, timeout=30),
            call_tool(config, "add", {"a": 2, "b": 3}, timeout=30),
            call_tool(config, "env_var", {"name": "TAMBO_MCP_TEST"}, timeout=30),
        )

    tools, added, env = asyncio.run(sessions())
    by_name = {tool.name: tool for tool in tools}
    assert set(by_name) == TEST_SERVER_TOOLS
    assert by_name["add"].description == "Add two integers."
    assert by_name["add"].input_schema["properties"].keys() == {"a", "b"}
    assert by_name["add"].input_schema["required"] == ["a", "b"]
    assert (text_of(added), added.is_error) == ("5", False)
    assert text_of(env) == "from the config"


def test_a_hung_stdio_call_returns_at_the_timeout_and_leaves_no_process():
    # On a loaded machine the server's start-up alone (over a second) may use up the timeout;
    # either way the call must end on time and the server must be gone.
    result, elapsed, leftovers = asyncio.run(
        call_and_list_leftover_tasks(stdio_config(), "hang", {}, timeout=2.0)
    )
    assert result.is_error
    assert text_of(result) == "The MCP server 'local' did not answer within 2 seconds."
    assert elapsed < 2.0 + SHUTDOWN_ALLOWANCE
    assert live_children("mcp_server.py stdio") == []
    assert leftovers == []


def test_a_stdio_server_that_ignores_its_closed_stdin_is_killed(tmp_path):
    # Never speaks MCP and does not exit when its stdin closes: the client must kill it.
    pid_file = tmp_path / "server.pid"
    script = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"
    config = stdio_config(args=("-c", script, str(pid_file)))
    result, elapsed, leftovers = asyncio.run(call_and_list_leftover_tasks(config, "add", {}, timeout=1.5))
    assert result.is_error
    assert text_of(result) == "The MCP server 'local' did not answer within 1.5 seconds."
    assert elapsed < 1.5 + SHUTDOWN_ALLOWANCE
    assert pid_file.exists()
    assert live_children("time.sleep(600)") == []
    assert leftovers == []


def test_a_server_that_cannot_start_makes_list_tools_raise():
    config = stdio_config(command="/nonexistent/mcp-server")
    with pytest.raises(McpClientError, match="'local' could not be reached"):
        asyncio.run(list_tools(config, timeout=5))
    result = asyncio.run(call_tool(config, "add", {"a": 1, "b": 2}, timeout=5))
    assert result.is_error and text_of(result) == "The MCP server 'local' could not be reached."


def test_an_unreachable_server_is_left_out_at_once_and_retried_in_the_background_with_backoff(caplog):
    now = [1000.0]
    attempts = []

    async def counting_list_tools(config, *, timeout):
        attempts.append(now[0])
        return await list_tools(config, timeout=timeout)

    cache = McpToolCache(failure_ttl=5.0, max_backoff=20.0, timeout=5.0, clock=lambda: now[0],
                         lister=counting_list_tools)
    config = stdio_config(name="broken", command="/nonexistent/mcp-server")
    caplog.set_level(logging.WARNING, logger="tools.mcp_client")

    async def main():
        seen = [await cache.get(config)]  # the first run waits for the listing
        seen.append(await cache.get(config))  # the failure stands: no listing
        for step in (5.0, 10.0, 20.0, 20.0):  # the backoff doubles after each failure, up to the cap
            now[0] += step - 0.5
            seen.append(await cache.get(config))
            assert cache.listing(config) is None  # not yet due
            now[0] += 0.5
            seen.append(await cache.get(config))  # due: retried in the background, this run goes on
            await cache.listing(config)
        return seen

    seen = asyncio.run(main())
    assert seen == [None] * 10
    assert len(attempts) == 5
    assert len([r for r in caplog.records if "broken" in r.getMessage()]) == 5


def test_a_burst_that_misses_the_cache_shares_one_listing_on_one_stdio_process(tmp_path):
    from tools.mcp_sessions import McpSessions

    starts = tmp_path / "starts"
    config = stdio_config(env={"MCP_TEST_START_LOG": str(starts), "PATH": os.environ.get("PATH", "")})

    async def main():
        kept = McpSessions(idle_timeout=30)
        cache = McpToolCache(lister=kept.list_tools, timeout=30)
        listed = await asyncio.gather(*(cache.get(config) for _ in range(50)))
        # A tool call afterwards goes to the same process.
        result = await kept.call_tool(config, "add", {"a": 1, "b": 2}, timeout=30)
        kept.close_all()
        return listed, result

    listed, result = asyncio.run(main())
    assert all({tool.name for tool in tools} == TEST_SERVER_TOOLS for tools in listed)
    assert text_of(result) == "3"
    assert len(starts.read_text().split()) == 1


# --- streamable HTTP -------------------------------------------------------------------------


def test_it_lists_the_tools_of_an_http_server(mcp_http_url):
    tools = asyncio.run(list_tools(http_config(mcp_http_url), timeout=10))
    assert {tool.name for tool in tools} == TEST_SERVER_TOOLS
    assert next(t for t in tools if t.name == "echo").input_schema["required"] == ["text"]


@pytest.mark.parametrize(
    ("tool_name", "arguments", "content", "is_error"),
    [
        ("add", {"a": 40, "b": 2}, [{"type": "text", "text": "42"}], False),
        ("echo", {"text": "héllo 😀"}, [{"type": "text", "text": "héllo 😀"}], False),
        (
            "document",
            {},
            [
                {
                    "type": "resource",
                    "resource": {"uri": "memo://greeting", "mimeType": "text/plain", "text": "hello from a resource"},
                }
            ],
            False,
        ),
        ("fail", {}, [{"type": "text", "text": "Error executing tool fail: this tool always fails"}], True),
        ("no_such_tool", {}, [{"type": "text", "text": "Unknown tool: no_such_tool"}], True),
    ],
)
def test_it_calls_tools_over_http(mcp_http_url, tool_name, arguments, content, is_error):
    result = asyncio.run(call_tool(http_config(mcp_http_url), tool_name, arguments, timeout=10))
    assert (result.content, result.is_error) == (content, is_error)


def test_an_image_arrives_as_a_base64_resource_over_http(mcp_http_url):
    result = asyncio.run(call_tool(http_config(mcp_http_url), "image", {}, timeout=10))
    [block] = result.content
    assert block["type"] == "resource" and block["resource"]["mimeType"] == "image/png"
    assert base64.b64decode(block["resource"]["blob"]).startswith(PNG_SIGNATURE)


def test_configured_headers_reach_the_http_server(mcp_http_url):
    config = http_config(mcp_http_url, headers={"X-Test-Token": "t0ken"})
    result = asyncio.run(call_tool(config, "header", {"name": "X-Test-Token"}, timeout=10))
    assert text_of(result) == "t0ken"


def test_a_hung_http_call_returns_at_the_timeout_without_leaving_tasks(mcp_http_url):
    result, elapsed, leftovers = asyncio.run(
        call_and_list_leftover_tasks(http_config(mcp_http_url), "hang", {}, timeout=1.5)
    )
    assert result.is_error
    assert text_of(result) == "The MCP server 'remote' did not answer within 1.5 seconds."
    assert 1.4 < elapsed < 1.5 + SHUTDOWN_ALLOWANCE
    assert leftovers == []


def test_a_closed_port_makes_list_tools_raise_and_calls_fail_safely():
    config = http_config(f"http://127.0.0.1:{free_port()}/mcp")
    with pytest.raises(McpClientError, match="'remote' could not be reached"):
        asyncio.run(list_tools(config, timeout=5))
    result = asyncio.run(call_tool(config, "add", {"a": 1, "b": 2}, timeout=5))
    # The model sees what failed, not the local exception text.
    assert result.is_error and text_of(result) == "The MCP server 'remote' could not be reached."


def test_the_cache_fetches_from_the_server(mcp_http_url):
    tools = asyncio.run(McpToolCache().get(http_config(mcp_http_url)))
    assert {tool.name for tool in tools} == TEST_SERVER_TOOLS


def test_the_cache_keeps_a_tool_list_for_its_ttl(mcp_http_url, monkeypatch):
    import tools.mcp_client as mcp_client

    fetches = []
    real_list_tools = mcp_client.list_tools

    async def counting_list_tools(config, *, timeout):
        fetches.append(config.name)
        # A plain list: a lister whose server set no ttl (a 2026-07-28 server's ttlMs: test_mcp_eras.py).
        return list(await real_list_tools(config, timeout=timeout))

    monkeypatch.setattr(mcp_client, "list_tools", counting_list_tools)
    now = [1000.0]
    cache = McpToolCache(ttl=30.0, clock=lambda: now[0])
    config = http_config(mcp_http_url)

    async def three_gets():
        first = await cache.get(config)
        now[0] += 29.0
        second = await cache.get(config)  # within the TTL: no connection
        now[0] += 2.0
        third = await cache.get(config)  # expired: fetched again
        return first, second, third

    first, second, third = asyncio.run(three_gets())
    assert first == second == third and len(first) == len(TEST_SERVER_TOOLS)
    assert fetches == ["remote", "remote"]
    # Each caller gets its own list: changing one does not change the cache.
    first.clear()
    assert len(asyncio.run(cache.get(config))) == len(TEST_SERVER_TOOLS)


def test_the_timeout_also_bounds_a_server_that_never_answers():
    # A TCP listener that accepts connections but never speaks HTTP.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        config = http_config(f"http://127.0.0.1:{listener.getsockname()[1]}/mcp")
        started = time.monotonic()
        with pytest.raises(McpClientError, match="did not answer within 1 seconds"):
            asyncio.run(list_tools(config, timeout=1))
        assert time.monotonic() - started < 3
    finally:
        listener.close()


def test_the_stdio_helper_points_at_the_test_server():
    command, args = stdio_command()
    assert os.path.exists(command) and Path(args[0]).name == "mcp_server.py"
