"""Runs a Node script of tests/compat (the official JavaScript packages) against the live server.

Each script prints one JSON line `{"scenario": name, "ok": true|false, ...facts | "error": message}` per
scenario and exits non-zero when one failed; `run_scenario` fails the test with the script's own message
and returns the facts for the REST checks that follow.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import require_part

COMPAT_DIR = Path(__file__).resolve().parents[1] / "compat"
USER_KEY = "alice"  # the `api` fixture's user, so the REST checks see the same threads


def node_for(folder: Path, package: str) -> str:
    """The `node` executable, once `package` is installed in `folder` (else the test fails in CI)."""
    node = shutil.which("node")
    installed = (folder / "node_modules" / package / "package.json").is_file()
    require_part(bool(node and installed), f"run `npm ci` in {folder.relative_to(COMPAT_DIR.parent.parent)} "
                                           "(bin/test does it)")
    return node


def run_node(folder: Path, package: str, args: list[str], base_url: str, api_key: str,
             extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "TAMBO_URL": base_url, "TAMBO_API_KEY": api_key, "TAMBO_USER_KEY": USER_KEY,
           **(extra_env or {})}
    try:
        return subprocess.run([node_for(folder, package), *args], cwd=folder, env=env, capture_output=True,
                              text=True, timeout=120)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"node {args} in {folder.name} did not finish in 120 s; stderr:\n{exc.stderr}")


def scenario_result(done: subprocess.CompletedProcess, name: str) -> dict:
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    result = next((r for r in results if r.get("scenario") == name), None)
    if done.returncode != 0 or result is None or not result.get("ok"):
        message = result.get("error") if result else "no result line"
        pytest.fail(f"scenario {name} failed: {message}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}")
    return result


def run_scenario(script: str, name: str, base_url: str, api_key: str, *, folder: Path = COMPAT_DIR,
                 package: str = "@tambo-ai/client", extra_env: dict[str, str] | None = None) -> dict:
    return scenario_result(run_node(folder, package, [script, name], base_url, api_key, extra_env), name)
