"""A serving process told to stop (SIGTERM) while it streams runs (tambo_project/lifespan.py).

Every open stream ends with a retryable RUN_ERROR (or had finished), every run is recorded as ended
and its thread released, the kept MCP session's child process exits, the process exits 0, and
nothing is logged as an error: no traceback, no "lifespan unsupported", no cancelled tasks.
"""
from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

import pytest
import requests

from tests.support.live import LiveServer
from tests.support.mcp_fixtures import SERVER_SCRIPT
from tests.support.processes import children_running
from tests.support.run_requests import run, tool_results
from tests.support.sse import iter_events

pytestmark = pytest.mark.django_db(transaction=True)

STREAMS = 20


def alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class OpenStream(threading.Thread):
    """One `!slow` run (the offline model takes seconds over it), read to its end on a thread."""

    def __init__(self, url: str, key: str):
        super().__init__(daemon=True)
        self.url, self.key = url, key
        self.streaming = threading.Event()  # the first text delta arrived
        self.events: list[dict] = []
        self.thread_id: str | None = None
        self.error: str | None = None

    def run(self) -> None:
        try:
            body = {"userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": "!slow"}]}}
            with requests.post(self.url + "/v1/threads/runs", json=body, headers={"x-api-key": self.key},
                               stream=True, timeout=60) as response:
                self.thread_id = response.headers.get("X-Thread-Id")
                for event in iter_events(response):
                    self.events.append(event)
                    if event["type"] == "TEXT_MESSAGE_CONTENT":
                        self.streaming.set()
        except requests.RequestException as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.streaming.set()


def test_a_shutdown_ends_every_open_stream_retryably_and_leaves_nothing_running(project, api_key):
    from tools.models import McpServer

    McpServer.objects.create(project=project, name="kept", transport="stdio", command=sys.executable,
                             args=[str(SERVER_SCRIPT), "stdio"])
    # Runs that cannot be taken over (docs/operations.md#takeover; tests/runs/test_takeover.py hands them over).
    server = LiveServer("shutdown", {"LOG_LEVEL": "INFO", "RUN_TAKEOVER_LIMIT": "0"})
    try:
        from tests.conftest import Api

        api = Api(server.url, api_key)
        # A run that calls the MCP server's tool leaves its session (a child process) open.
        _, events = run(api, 'Please use kept__add with {"a": 2, "b": 3}')
        assert [r["content"] for r in tool_results(events)] == ["5"]
        [mcp_child] = children_running(server.process.pid, SERVER_SCRIPT)

        streams = [OpenStream(server.url, api_key) for _ in range(STREAMS)]
        for stream in streams:
            stream.start()
        for stream in streams:
            assert stream.streaming.wait(60)
        assert [s.error for s in streams] == [None] * STREAMS

        server.process.send_signal(signal.SIGTERM)
        # Once shut down, uvicorn re-raises the signal it stopped on: the usual end for a supervisor.
        assert server.process.wait(timeout=60) == -signal.SIGTERM
        for stream in streams:
            stream.join(60)
    finally:
        if server.process.poll() is None:
            server.stop()
    log = server.log_text()

    ends = [(s.events[-1]["type"], s.events[-1].get("code"), s.events[-1].get("isRetryable")) for s in streams]
    shut = ends.count(("RUN_ERROR", "SERVER_SHUTTING_DOWN", True))
    assert shut >= 1 and shut + ends.count(("RUN_FINISHED", None, None)) == STREAMS, ends
    assert [s.error for s in streams] == [None] * STREAMS

    from threads.models import RunStatus, Thread

    threads = Thread.objects.filter(id__in=[s.thread_id for s in streams])
    assert sorted(threads.values_list("run_status", flat=True)) == [RunStatus.IDLE] * STREAMS
    assert not alive(mcp_child)
    # " ERROR " and "ERROR:" are the two log formats' level (Django's, uvicorn's); WARNING the same.
    for bad in ("Traceback", " ERROR ", "ERROR:", " WARNING ", "WARNING:", "lifespan' protocol appears unsupported",
                "Cancel "):
        assert bad not in log, log[-4000:]
    assert "Application shutdown complete." in log
