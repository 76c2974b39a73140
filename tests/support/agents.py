"""Runs one of tests/support/agent_apps under uvicorn on loopback, its model at a fake OpenAI server."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from typing import Callable

import requests

from tests.support.agent_apps.counting import COUNTS_PATH
from tests.support.live import LOG_DIR, ROOT, free_port

AGENT_APPS = {"langgraph": "tests.support.agent_apps.langgraph_app:app",
              "pydantic-ai": "tests.support.agent_apps.pydantic_ai_app:app"}


class AgentServer:
    """`url` is the agent's AG-UI endpoint. `stop()` ends it; `kill()` ends it at once (an agent that dies);
    `counts()` says how its requests ended, seen at the agent's side."""

    def __init__(self, kind: str, fake_openai_url: str, start_timeout: float = 120.0):
        self.kind = kind
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/agent"
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.log_path = LOG_DIR / f"agent-{kind}-{self.port}.log"
        self._log = open(self.log_path, "wb")
        env = {**os.environ, "FAKE_OPENAI_URL": fake_openai_url, "PYTHONUNBUFFERED": "1"}
        env.pop("OPENAI_API_KEY", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", AGENT_APPS[kind], "--host", "127.0.0.1", "--port", str(self.port),
             "--no-access-log"], cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        try:
            self._wait(start_timeout)
        except BaseException:
            self.stop()
            raise

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"The agent exited early:\n{self.log_path.read_text()[-3000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"The agent did not start in {timeout} s; see {self.log_path}")

    def counts(self) -> dict[str, int]:
        """How the agent's requests ended, counted at its side (tests/support/agent_apps/counting.py)."""
        return requests.get(self.url.rsplit("/", 1)[0] + COUNTS_PATH, timeout=10).json()

    def wait_counts(self, done: Callable[[dict[str, int]], bool], timeout: float = 30.0) -> dict[str, int]:
        """The counts once `done(counts)` holds; fails after `timeout` seconds with the last counts."""
        deadline = time.monotonic() + timeout
        while True:
            counts = self.counts()
            if done(counts) or time.monotonic() > deadline:
                return counts
            time.sleep(0.05)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()
