"""MCP servers under load, through a live server: one tool listing per server at a time, and a
server that fails costs one wait, not one per run (tools/mcp_tool_cache.py)."""
from __future__ import annotations

import asyncio
import sys
import time
import uuid

import pytest

from tests.support.live import LiveServer
from tests.support.many_streams import run_streams
from tests.support.mcp_fixtures import SERVER_SCRIPT
from tests.support.run_requests import run, text_of
from tests.support.sse import types
from tests.support.stalling_http import HangingListener

pytestmark = pytest.mark.django_db(transaction=True)

BURST = 200


def test_a_burst_of_runs_starts_one_process_of_a_stdio_mcp_server(live_server_process, project, api_key,
                                                                   tmp_path):
    from tools.models import McpServer

    from projects.config import Limits, ProjectSettings, project_settings_save

    # 200 runs at once: the project turns off the server's default run rate (60 a minute).
    project_settings_save(project, ProjectSettings(limits=Limits(runs_per_minute=0)))
    starts = tmp_path / "starts"
    McpServer.objects.create(project=project, name="burst", transport="stdio", command=sys.executable,
                             args=[str(SERVER_SCRIPT), "stdio"], env={"MCP_TEST_START_LOG": str(starts)})
    results, _ = asyncio.run(run_streams(live_server_process.url, api_key, BURST, "Which tools do you have?"))
    failures = [r.error or r.events[-3:] for r in results if not r.finished]
    assert not failures, failures[:5]
    # Every run was offered the server's tools: the one listing served them all.
    assert all("burst__add" in r.text for r in results)
    assert len(starts.read_text().split()) == 1


@pytest.fixture(scope="module")
def short_timeout_server(django_db_setup, django_db_blocker):
    # A failed listing is due for its retry half a second later: every run below comes after that.
    server = LiveServer("mcp-hang-once", {"MCP_TIMEOUT": "5", "MCP_RETRY_SECONDS": "0.5"})
    yield server
    server.stop()


def test_a_hanging_http_mcp_server_costs_one_wait_across_three_runs(short_timeout_server, transactional_db,
                                                                    project, api_key):
    from tests.conftest import Api
    from tools.models import McpServer

    api = Api(short_timeout_server.url, api_key)
    listener = HangingListener()
    name = f"hangs-{uuid.uuid4().hex[:6]}"
    try:
        McpServer.objects.create(project=project, name=name, transport="http", url=listener.url("/mcp"))
        replies = []
        for _ in range(3):
            _, events = run(api, "hello")
            assert types(events)[-1] == "RUN_FINISHED", types(events)
            replies.append(text_of(events))
            time.sleep(1.0)  # pacing, past the retry interval (no assertion on time)
        connections = len(listener.accepted)
    finally:
        listener.close()
    assert all(f"{name}__" not in reply for reply in replies)
    # The first run waited for the listing and its timeout ("left out"); the next two were answered
    # without the server ("unreachable") before any further listing ended: the retry ran in the
    # background instead of in a run.
    listed, unreachable = f"Leaving out the tools of MCP server '{name}'", f"MCP server {name} is unreachable"
    lines = [line for line in short_timeout_server.log_text().splitlines() if listed in line or unreachable in line]
    kinds = ["listed" if listed in line else "unreachable" for line in lines]
    assert kinds[:4] == ["listed", "unreachable", "unreachable", "unreachable"], kinds
    assert connections >= 2  # the retry was made


def test_an_http_mcp_server_that_trickles_its_answer_is_cut_at_mcp_timeout(short_timeout_server, transactional_db,
                                                                          project, api_key):
    """A byte every 2 s never trips a per-read timeout: MCP_TIMEOUT (5 s here) bounds the whole exchange
    (issue 33), counted in the bytes the server got to send; the run goes on without its tools."""
    from tests.conftest import Api
    from tests.support.stalling_http import TricklingServer
    from tools.models import McpServer

    body = b'{"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-03-26", "capabilities": {}}}'
    name = f"trickles-{uuid.uuid4().hex[:6]}"
    with TricklingServer(body, interval=2.0) as trickling:
        McpServer.objects.create(project=project, name=name, transport="http", url=trickling.url("/mcp"))
        _, events = run(Api(short_timeout_server.url, api_key), "hello")
        sent = trickling.sent
    assert types(events)[-1] == "RUN_FINISHED", types(events)
    assert f"{name}__" not in text_of(events)
    assert sent <= 3 < len(body), sent  # 5 s of a byte every 2 s, not the whole answer
    assert f"Leaving out the tools of MCP server '{name}'" in short_timeout_server.log_text()
