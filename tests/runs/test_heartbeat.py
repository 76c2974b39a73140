"""Heartbeats: while a run waits on a tool (or the model), every stream of it carries an SSE comment
`: keep-alive` each HEARTBEAT_SECONDS, so a proxy's read timeout does not cut it (runs/stream/feeds.py).

The wait is a real one: the test MCP server's `hang` tool, cut by MCP_TIMEOUT. The streams are read
raw (bytes, frame by frame); the official client reads the same kind of run in tests/compat.
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from tests.conftest import Api
from tests.support import node
from tests.support.live import LiveServer
from tests.support.mcp_fixtures import mcp_http_url  # noqa: F401 - fixture
from tests.support.run_requests import user_message

pytestmark = pytest.mark.django_db(transaction=True)

KEEP_ALIVE = b": keep-alive"


@pytest.fixture(scope="module")
def heartbeat_server(django_db_setup, django_db_blocker):
    server = LiveServer("heartbeat", {"HEARTBEAT_SECONDS": "0.25", "MCP_TIMEOUT": "2"})
    yield server
    server.stop()


@pytest.fixture
def hb_api(heartbeat_server, transactional_db, project, api_key, mcp_http_url) -> Api:  # noqa: F811
    from tools.models import McpServer

    McpServer.objects.create(project=project, name="slow", transport="http", url=mcp_http_url)
    return Api(heartbeat_server.url, api_key)


def raw_frames(response) -> Iterator[bytes]:
    """The stream's frames (the bytes between blank lines) as they arrive, comments included."""
    buffer = b""
    for chunk in response.iter_content(chunk_size=None):
        buffer += chunk
        while b"\n\n" in buffer:
            frame, buffer = buffer.split(b"\n\n", 1)
            yield frame


def kind(frame: bytes) -> str:
    """An event frame's type, or the comment line itself."""
    if frame.startswith(b":"):
        return frame.decode()
    data = b"".join(line[5:] for line in frame.split(b"\n") if line.startswith(b"data:"))
    return json.loads(data)["type"]


def between(kinds: list[str], first: str, last: str) -> list[str]:
    start = kinds.index(first)
    return kinds[start + 1:kinds.index(last, start)]


def assert_keep_alives_while_the_tool_hangs(kinds: list[str]) -> None:
    assert kinds[-1] == "RUN_FINISHED", kinds
    waiting = between(kinds, "TOOL_CALL_END", "TOOL_CALL_RESULT")
    # Only comments while the tool hangs (2 s), one every 0.25 s: more than one, whatever the load.
    assert len(waiting) >= 2 and set(waiting) == {KEEP_ALIVE.decode()}, kinds


def test_a_run_waiting_on_a_tool_sends_keep_alive_comments(hb_api):
    response = hb_api.post("/v1/threads/runs", {"userKey": "alice", "message": user_message("slow__hang {}")},
                           stream=True)
    assert response.status_code == 200
    assert_keep_alives_while_the_tool_hangs([kind(f) for f in raw_frames(response)])


def test_a_reader_of_the_events_route_gets_them_too(hb_api):
    response = hb_api.post("/v1/threads/runs", {"userKey": "alice", "message": user_message("slow__hang {}")},
                           stream=True)
    thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
    frames = raw_frames(response)
    for frame in frames:
        if kind(frame) == "TOOL_CALL_START":
            break
    replay = hb_api.session.get(f"{hb_api.base_url}/v1/threads/{thread_id}/runs/{run_id}/events",
                                params={"userKey": "alice"}, stream=True, timeout=30)
    assert replay.status_code == 200, replay.text
    assert_keep_alives_while_the_tool_hangs([kind(f) for f in raw_frames(replay)])
    assert [kind(f) for f in frames][-1] == "RUN_FINISHED"


def test_an_agui_run_waiting_on_a_tool_sends_keep_alive_comments(hb_api):
    body = {"threadId": f"t-{uuid.uuid4()}", "runId": f"r-{uuid.uuid4()}", "tools": [], "context": [],
            "state": {}, "forwardedProps": {"userKey": "alice"},
            "messages": [{"id": f"u-{uuid.uuid4()}", "role": "user", "content": "slow__hang {}"}]}
    response = hb_api.post("/v1/agui", body, stream=True)
    assert response.status_code == 200, response.text
    assert_keep_alives_while_the_tool_hangs([kind(f) for f in raw_frames(response)])


def test_the_official_client_ignores_the_keep_alive_comments(hb_api, heartbeat_server, api_key):
    result = node.run_scenario("run.mjs", "slow_tool_run", heartbeat_server.url, api_key)
    assert result["status"] == "idle"
    # What the client saw is the events alone: no comment became an event.
    assert result["eventTypes"][0] == "RUN_STARTED" and result["eventTypes"][-1] == "RUN_FINISHED"
    thread = hb_api.thread(result["threadId"])
    assert thread["runStatus"] == "idle" and "lastRunError" not in thread
