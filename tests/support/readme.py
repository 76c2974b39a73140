"""The README's quick start as data, and what running it the way a newcomer does needs (issue 35):
tests/test_readme_quickstart.py runs its first block, tests/test_install.py its production block."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
import requests

from tests.support.sse import read_events

ROOT = Path(__file__).resolve().parents[2]
# The test process's own configuration must not reach the commands: they run as a newcomer's would.
UNSET = ("SECRET_KEY", "DEBUG", "DATABASE_URL", "DATABASE_LISTEN_URL", "SQLITE_PATH", "STATIC_ROOT",
         "STATIC_COLLECTED", "DJANGO_SETTINGS_MODULE", "VIRTUAL_ENV", "PYTHONPATH", "OPENAI_API_KEY",
         "OPENAI_BASE_URL", "MODEL_PROVIDER", "WORKERS", "HOST", "PORT", "MIGRATE", "PROMETHEUS_MULTIPROC_DIR")


def shell_blocks(text: str) -> list[list[str]]:
    """The ```sh blocks of `text`, in order, as lists of command lines (comment-only lines and the
    comments after a command dropped)."""
    blocks = []
    for body in re.findall(r"^```sh\n(.*?)^```", text, flags=re.M | re.S):
        lines = [re.sub(r"\s+#.*$", "", line).strip() for line in body.splitlines()]
        blocks.append([line for line in lines if line and not line.startswith("#")])
    return blocks


def quick_start() -> tuple[list[str], list[str]]:
    """The README's two blocks before its first table: (the development block, the production block)."""
    head = (ROOT / "README.md").read_text().split("\n| ", 1)[0]
    blocks = shell_blocks(head)
    assert len(blocks) == 2, blocks
    return blocks[0], blocks[1]


def filled(line: str, fill: dict[str, str]) -> str:
    """`line` with what the README leaves to the reader filled in; nothing else may be left open."""
    for placeholder, value in fill.items():
        line = line.replace(placeholder, value)
    assert "…" not in line, line
    return line


def clean_checkout(target: Path) -> Path:
    """A copy of the files git knows (tracked, and new ones not ignored): what a clone of this tree holds,
    without the developer's `.venv`, `var/` or `node_modules`."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def newcomer_env(**extra: str) -> dict[str, str]:
    """This environment without the test's configuration nor its virtualenv on PATH, plus `extra`.

    pip byte-compiles what it installs, as it does for a user: an install not compiled was 20 s of CPU
    cheaper, but where PYTHONDONTWRITEBYTECODE is set (as on this machine) every later command compiled
    what it imported again, 2.5 s of CPU each (docs/testing.md)."""
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    return {**env, **extra}


def wait_for(base: str, process: subprocess.Popen, log: Path, path: str = "/healthz", attempts: int = 1200) -> None:
    """Polls `path` until it answers 200 (the first start installs, migrates and collects static files)."""
    for _ in range(attempts):
        if process.poll() is not None:
            pytest.fail(f"the server exited ({process.returncode}): {log.read_text(errors='replace')[-3000:]}")
        try:
            if requests.get(base + path, timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        try:
            process.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
    pytest.fail(f"the server never answered {path}: {log.read_text(errors='replace')[-3000:]}")


def answered(base: str, key: str) -> str:
    """The text of one run on a new thread, made with `key`."""
    body = {"userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": "hello"}]}}
    response = requests.post(base + "/v1/threads/runs", json=body, headers={"x-api-key": key}, stream=True,
                             timeout=120)
    assert response.status_code == 200, response.text
    events = read_events(response)
    assert events[-1]["type"] == "RUN_FINISHED", events[-3:]
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def stop(process: subprocess.Popen, sig: int) -> int:
    """Sends `sig` to the process group (the shell and the server it started); its exit code."""
    if process.poll() is None:
        os.killpg(process.pid, sig)
    try:
        return process.wait(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise
