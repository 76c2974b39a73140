"""A real uvicorn server running the app in a subprocess, on the test database.

Its process is forked from a zygote that imported the app's libraries once (tests/support/zygote.py),
unless it runs through the installed command (`through_cli`) or TEST_SERVER_FORK=0."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import requests
from django.conf import settings

from tests.support.zygote import Forked

ROOT = Path(__file__).resolve().parents[2]
FORK = os.environ.get("TEST_SERVER_FORK", "1") != "0"
LOG_DIR = ROOT / "test-artifacts" / "server-logs"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url() -> str:
    """The URL of the database pytest-django set up (its test database), for the server process."""
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    return f"postgres://{db['USER']}:{db.get('PASSWORD') or ''}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


class LiveServer:
    def __init__(self, name: str, extra_env: dict[str, str] | None = None,
                 app: str = "tambo_project.asgi:application", args: tuple[str, ...] = (),
                 start_timeout: float = 120.0, through_cli: bool = False, port: int | None = None):
        self.name = name
        self.port = port or free_port()  # given: the server's own URL goes into its environment
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "DATABASE_URL": database_url(), "MODEL_PROVIDER": "offline",
               "OFFLINE_MODEL_DELAY": "0.002", "RUN_WATCH_INTERVAL": "0.2", "LOG_LEVEL": "WARNING",
               "PYTHONUNBUFFERED": "1",
               # No retention pass at a random moment of a test: tests/retention runs it when it means to.
               "RETENTION_INTERVAL_SECONDS": "0"}
        env.pop("OPENAI_API_KEY", None)
        env.update(extra_env or {})
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.log_path = LOG_DIR / f"{name}-{self.port}.log"
        self._log = open(self.log_path, "wb")
        command = [sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1",
                   "--port", str(self.port), "--no-access-log", "--timeout-graceful-shutdown", "2",
                   "--http", "tambo_project.http_guard:GuardedHTTPProtocol", *args]  # as bin/serve
        if through_cli:
            # The installed command's `serve` (tambo_project/cli.py), as the image runs it.
            command = [sys.executable, "-c", "from tambo_project.cli import main; main()", "serve", "--host",
                       "127.0.0.1", "--port", str(self.port), "--no-collectstatic", *args]
            env.setdefault("SECRET_KEY", "live-server-cli-" + "k" * 40)
            env.setdefault("STATIC_COLLECTED", "false")
            env.setdefault("GRACEFUL_SHUTDOWN_SECONDS", "2")
        if through_cli or not FORK:
            self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        else:
            self.process = Forked(command[3:], env, ROOT, self.log_path)
        self._started = time.monotonic()
        try:
            self._wait(start_timeout)
        except BaseException:
            self.stop()  # a server that did not come up must not outlive the test run
            raise
        self._ready_cpu, self._ready_wall = process_cpu(self.process.pid), time.monotonic() - self._started

    def _wait(self, timeout: float = 90.0) -> None:  # a loaded machine takes a while to import the app
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"The server exited early; see {self.log_path}:\n{self.log_path.read_text()[-3000:]}")
            try:
                if requests.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"The server did not start in {timeout} s; see {self.log_path}")

    def log_text(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        _record_server(self, process_cpu(self.process.pid))
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()


def process_cpu(pid: int) -> float | None:
    """The CPU seconds a live process used so far, all its threads (None once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worker_name() -> str:
    """This test process's name in test-artifacts' files: its database pass and its xdist worker."""
    database = "pg" if os.environ.get("DATABASE_URL") else "sqlite"
    return f"{database}-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"


def _record_server(server: LiveServer, cpu: float | None) -> None:
    """Appends a stopped server's start and whole CPU to test-artifacts/servers-<worker>.tsv: what the
    suite's server processes cost (docs/testing.md#where-the-time-goes)."""
    if cpu is None or not hasattr(server, "_ready_cpu"):
        return
    with open(ROOT / "test-artifacts" / f"servers-{worker_name()}.tsv", "a") as out:
        out.write(f"{server.name}\t{server._ready_wall:.2f}\t{server._ready_cpu:.2f}\t{cpu:.2f}\t"
                  f"{time.monotonic() - server._started:.1f}\n")


@contextmanager
def openai_live_server(name: str, base_url: str, api_key: str, **env: str) -> Iterator[LiveServer]:
    """A LiveServer whose model provider is `openai` at `base_url` (the tests' fake vendor)."""
    server = LiveServer(name, {"MODEL_PROVIDER": "openai", "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": api_key,
                               **env})
    try:
        yield server
    finally:
        server.stop()
