"""Runs one of tests/support/agent_apps under uvicorn on loopback, its model at a fake OpenAI server."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from tests.support.live import LOG_DIR, ROOT, free_port

AGENT_APPS = {"langgraph": "tests.support.agent_apps.langgraph_app:app",
              "pydantic-ai": "tests.support.agent_apps.pydantic_ai_app:app"}


class AgentServer:
    """`url` is the agent's AG-UI endpoint. `stop()` ends it; `kill()` ends it at once (an agent that dies)."""

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
