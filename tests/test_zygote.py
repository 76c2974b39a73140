"""Test servers forked from the zygote (tests/support/zygote.py) are whole servers of their own: each
runs on its own environment, and its end is reported as a started process's would be."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.support.live import ROOT, LiveServer, database_url, free_port
from tests.support.sse import read_events
from tests.support.zygote import Forked, zygote

pytestmark = [pytest.mark.django_db(transaction=True)]


def _answer(server: LiveServer, key: str) -> str:
    body = {"userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": "hello"}]}}
    response = requests.post(server.url + "/v1/threads/runs", json=body, headers={"x-api-key": key}, stream=True,
                             timeout=30)
    return "".join(e.get("delta", "") for e in read_events(response)) + response.headers.get("X-Run-Id", "")


def test_two_forked_servers_each_run_on_their_own_environment(api_key):
    offline = LiveServer("zygote-offline")
    # The second one's model is a vendor at a closed port: its runs end with the provider's error.
    vendor = LiveServer("zygote-vendor", {"MODEL_PROVIDER": "openai", "OPENAI_API_KEY": "sk-test",
                                          "OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1"})
    try:
        assert isinstance(offline.process, Forked) and offline.process.pid != vendor.process.pid
        assert "You said: hello" in _answer(offline, api_key)
        assert "You said" not in _answer(vendor, api_key)
    finally:
        offline.stop()
        vendor.stop()


def _both(app: str, env: dict[str, str], tmp_path: Path) -> tuple[Forked, subprocess.Popen, list[str]]:
    """The same uvicorn command line, each on a port of its own, forked by the zygote and started as
    `python -m uvicorn`; and the URLs they serve."""
    ports = [free_port(), free_port()]
    with open(tmp_path / "started.log", "wb") as log:
        started = subprocess.Popen([sys.executable, "-m", "uvicorn", app, "--port", str(ports[1])], cwd=ROOT,
                                   env=env, stdout=log, stderr=subprocess.STDOUT)
    forked = Forked([app, "--port", str(ports[0])], env, ROOT, tmp_path / "forked.log")
    return forked, started, [f"http://127.0.0.1:{port}" for port in ports]


def _serving(url: str) -> bool:
    try:
        return requests.get(url + "/healthz", timeout=1).status_code == 200
    except requests.RequestException:
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_a_forked_server_ends_with_the_code_a_started_one_ends_with(sig, tmp_path):
    env = {**os.environ, "DATABASE_URL": database_url(), "MODEL_PROVIDER": "offline"}
    forked, started, urls = _both("tambo_project.asgi:application", env, tmp_path)
    try:
        deadline = time.monotonic() + 120
        while not all(_serving(url) for url in urls):
            assert time.monotonic() < deadline and forked.poll() is None and started.poll() is None
            time.sleep(0.1)
        for process in (forked, started):
            process.send_signal(sig)
        assert forked.wait(timeout=60) == started.wait(timeout=60)
        assert forked.returncode in (0, -sig)
    finally:
        forked.kill()
        started.kill()


def test_a_forked_command_line_that_fails_ends_as_a_started_one_does(tmp_path):
    forked, started, _ = _both("no_such_module:application", {"PATH": "/usr/bin"}, tmp_path)
    assert forked.wait(timeout=60) == started.wait(timeout=60) != 0
    assert "no_such_module" in (tmp_path / "forked.log").read_text()
    assert zygote().process.poll() is None  # the zygote outlives its servers
