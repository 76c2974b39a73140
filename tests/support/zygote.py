"""Test servers started by fork from a process that has already imported the app's libraries.

A test server's start cost 2.1 s of CPU on a quiet machine, and most of it was importing Django,
pydantic, ag_ui, the vendor SDKs, psycopg and uvicorn; the suite starts about 110 of them
(docs/testing.md#where-the-time-goes). One zygote per test process imports those libraries once, no
Django settings and none of the project's own modules (they read the environment when imported), and
forks each server: the child takes the server's environment, working directory and log, then runs
uvicorn's own command line, as `python -m uvicorn` does. What the server does from there is what a
started one does; only the libraries' import happened before its environment was set, so a library
that reads the environment when imported is not preloaded (prometheus_client, OpenTelemetry).

The zygote is the servers' parent: it reaps them and answers their exit codes. It is single-threaded,
so a fork copies no lock held by another thread.

Protocol over a Unix socket pair, one JSON line each way: {"start": {...}} answers {"pid": N};
{"status": N} answers {"code": exit code or null while running}.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Imported by the zygote before any fork: the bulk of a server's start, none reading the environment
# at import time. Not here: the project's modules, prometheus_client (its value class is chosen by
# PROMETHEUS_MULTIPROC_DIR when imported), OpenTelemetry.
PRELOAD = ("django", "django.db.models", "django.http", "django.core.handlers.asgi", "django.contrib.admin",
           "rest_framework", "pydantic", "ag_ui.core", "openai", "anthropic",
           "httpx", "psycopg", "psycopg_pool", "uvicorn", "uvicorn.main", "uvloop", "httptools", "orjson",
           "jsonpatch", "cryptography.fernet", "jwt", "yaml", "aiohttp", "mcp")


# --- The zygote process --------------------------------------------------------------------------

def _preload() -> None:
    import importlib

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a library that does not import without settings is imported by the child
            pass


def _reap(codes: dict[int, int]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        codes[pid] = os.waitstatus_to_exitcode(status)


def _serve(control: socket.socket) -> dict:
    """Answers the test process until it goes away; returns only in a forked child, with its request."""
    codes: dict[int, int] = {}
    reader = control.makefile("rb")
    for line in reader:
        message = json.loads(line)
        _reap(codes)
        if "status" in message:
            reply = {"code": codes.get(message["status"])}
        else:
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                reader.close()
                control.close()
                return message["start"]
            reply = {"pid": pid}
        control.sendall(json.dumps(reply).encode() + b"\n")
    os._exit(0)  # the test process ended: its servers were stopped by their fixtures


def _run_child(start: dict) -> None:
    """In the forked child: become the server `start` describes, then run uvicorn's command line."""
    os.environ.clear()
    os.environ.update(start["env"])
    os.chdir(start["cwd"])
    log = os.open(start["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.argv = ["uvicorn", *start["args"]]
    from uvicorn.main import main

    main(args=start["args"], prog_name="uvicorn")  # click exits the process with uvicorn's code


def zygote_main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    _preload()
    control.sendall(b'{"ready": true}\n')
    _run_child(_serve(control))


# --- The test process's side ---------------------------------------------------------------------

class Zygote:
    """The test process's zygote, started on first use and shared by its servers."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen([sys.executable, "-c", "from tests.support.zygote import zygote_main; "
                                         "zygote_main()", str(theirs.fileno())],
                                        cwd=ROOT, env=env, pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL)
        theirs.close()
        self._socket = ours
        self._reader = ours.makefile("rb")
        self._lock = threading.Lock()
        ready = self._reader.readline()
        if not ready:
            raise RuntimeError(f"the test servers' zygote exited ({self.process.wait()})")

    def ask(self, message: dict) -> dict:
        with self._lock:
            self._socket.sendall(json.dumps(message).encode() + b"\n")
            line = self._reader.readline()
        if not line:
            raise RuntimeError(f"the test servers' zygote exited ({self.process.poll()})")
        return json.loads(line)


_zygote: Zygote | None = None
_zygote_lock = threading.Lock()


def zygote() -> Zygote:
    global _zygote
    with _zygote_lock:
        if _zygote is None or _zygote.process.poll() is not None:
            _zygote = Zygote()
        return _zygote


class Forked:
    """A server forked by the zygote, with the part of subprocess.Popen's interface the tests use."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path, log: Path) -> None:
        self._zygote = zygote()
        self.args = args
        self.pid = self._zygote.ask({"start": {"args": args, "env": env, "cwd": str(cwd), "log": str(log)}})["pid"]
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._zygote.ask({"status": self.pid})["code"]
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(0.02)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:  # it ended between the two
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)
