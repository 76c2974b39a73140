"""Start the test MCP server (tests/support/mcp_server.py) over streamable HTTP for a test.

`running_http_mcp_server()` picks a free port, starts the server in a subprocess, waits until it
answers HTTP, yields its endpoint URL and stops it afterwards. `mcp_http_url` wraps it as a
module-scoped pytest fixture (import it into the test module to use it).
"""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SERVER_SCRIPT = Path(__file__).with_name("mcp_server.py")
OAUTH_SERVER_SCRIPT = Path(__file__).with_name("mcp_oauth_server.py")
ELICIT_SERVER_SCRIPT = Path(__file__).with_name("mcp_elicit_server.py")
ERA_SERVER_SCRIPT = Path(__file__).with_name("mcp_era_server.py")


def stdio_command() -> tuple[str, tuple[str, ...]]:
    """The command and arguments that run the test server over stdio."""
    return sys.executable, (str(SERVER_SCRIPT), "stdio")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answers_http(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        connection.request("GET", "/")
        connection.getresponse().read()
        return True  # any status will do: something is serving HTTP
    except OSError:
        return False
    finally:
        connection.close()


@contextmanager
def running_http_mcp_server(*, startup_timeout: float = 60.0, transport: str = "http") -> Iterator[str]:
    """Run the test server over streamable HTTP (or the older HTTP+SSE: `transport="sse"`); yield its URL."""
    port = free_port()
    with _running([str(SERVER_SCRIPT), transport, "--port", str(port)], port, startup_timeout):
        yield f"http://127.0.0.1:{port}/{'sse' if transport == 'sse' else 'mcp'}"


@contextmanager
def running_oauth_mcp_server(*, startup_timeout: float = 60.0) -> Iterator[str]:
    """Run the protected test server (tests/support/mcp_oauth_server.py); yield its base URL
    (the MCP endpoint is `<base>/mcp`, the authorization server `<base>`)."""
    port = free_port()
    with _running([str(OAUTH_SERVER_SCRIPT), "--port", str(port)], port, startup_timeout):
        yield f"http://127.0.0.1:{port}"


@contextmanager
def running_elicit_mcp_server(*, legacy: bool = False, call_log: str | None = None,
                              startup_timeout: float = 60.0) -> Iterator[str]:
    """Run the test server whose tools ask for input (tests/support/mcp_elicit_server.py): the
    2026-07-28 era, or with `legacy` a session-era one; each tool call is appended to `call_log`."""
    port = free_port()
    env = {**os.environ, "MCP_TEST_CALL_LOG": call_log} if call_log else None
    with _running([str(ELICIT_SERVER_SCRIPT), "--port", str(port), *(["--legacy"] if legacy else [])], port,
                  startup_timeout, env=env):
        yield f"http://127.0.0.1:{port}/mcp"


@contextmanager
def running_era_mcp_server(*, legacy: bool = False, ttl_ms: int | None = None, call_log: str | None = None,
                           startup_timeout: float = 60.0) -> Iterator[str]:
    """Run the protocol-era test server (tests/support/mcp_era_server.py): the 2026-07-28 era, or with
    `legacy` a session-era one; `ttl_ms` its tool lists' `ttlMs`; each listing and call is appended to
    `call_log`."""
    port = free_port()
    env = {**os.environ, "MCP_TEST_CALL_LOG": call_log} if call_log else None
    args = [str(ERA_SERVER_SCRIPT), "--port", str(port), *(["--legacy"] if legacy else []),
            *(["--ttl-ms", str(ttl_ms)] if ttl_ms is not None else [])]
    with _running(args, port, startup_timeout, env=env):
        yield f"http://127.0.0.1:{port}/mcp"


@contextmanager
def _running(args: list[str], port: int, startup_timeout: float, env: dict | None = None) -> Iterator[None]:
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            [sys.executable, *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        try:
            deadline = time.monotonic() + startup_timeout
            while not _answers_http(port):
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    output = log.read().decode(errors="replace")[-2000:]
                    raise RuntimeError(f"The test MCP server did not start on port {port}:\n{output}")
                time.sleep(0.05)
            yield
        finally:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


@pytest.fixture(scope="module")
def mcp_http_url() -> Iterator[str]:
    with running_http_mcp_server() as url:
        yield url


@pytest.fixture(scope="module")
def mcp_sse_url() -> Iterator[str]:
    with running_http_mcp_server(transport="sse") as url:
        yield url
