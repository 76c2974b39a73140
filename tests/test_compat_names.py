"""Thread names and suggestions through the official JavaScript packages, under Node.

Each test runs one scenario of `tests/compat/names.mjs` (`@tambo-ai/client` 1.1.x and the
`@tambo-ai/typescript-sdk` 0.96.x it holds, installed by `npm ci` in tests/compat) against the live
server, fails with the script's own message on any mismatch, then checks through the REST API what
the server stored.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import require_part

pytestmark = pytest.mark.django_db(transaction=True)

COMPAT_DIR = Path(__file__).resolve().parent / "compat"
USER_KEY = "alice"  # the `api` fixture's user, so the REST checks see the same threads


def run_scenario(name: str, base_url: str, api_key: str) -> dict:
    node = shutil.which("node")
    installed = (COMPAT_DIR / "node_modules" / "@tambo-ai" / "client" / "package.json").is_file()
    require_part(bool(node and installed), "run `npm ci` in tests/compat (bin/test does it)")
    env = {**os.environ, "TAMBO_URL": base_url, "TAMBO_API_KEY": api_key, "TAMBO_USER_KEY": USER_KEY}
    try:
        done = subprocess.run([node, "names.mjs", name], cwd=COMPAT_DIR, env=env, capture_output=True, text=True,
                              timeout=120)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"compat scenario {name} did not finish in 120 s; stderr:\n{exc.stderr}")
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    result = next((r for r in results if r.get("scenario") == name), None)
    if done.returncode != 0 or result is None or not result.get("ok"):
        message = result.get("error") if result else "no result line"
        pytest.fail(f"compat scenario {name} failed: {message}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}")
    return result


def test_the_official_sdk_names_a_thread_the_official_client_made(live_server_url, api_key, api, project):
    result = run_scenario("generate_name", live_server_url, api_key)

    thread = api.get(f"/v1/threads/{result['threadId']}").json()
    assert thread["name"] == result["name"] == "Plan a weekend in Lisbon with museums"
    assert result["projectId"] == project.id


def test_suggestions_made_and_listed_as_the_react_hooks_do_are_stored(live_server_url, api_key, api):
    result = run_scenario("suggestions_v1", live_server_url, api_key)

    listed = api.get(f"/v1/threads/{result['threadId']}/messages/{result['messageId']}/suggestions").json()
    assert [s["id"] for s in listed["suggestions"]] == result["suggestionIds"]
    assert [s["title"] for s in listed["suggestions"]] == ["Show WeatherCard", "Tell me more"]


def test_the_official_clients_suggestion_calls_use_the_older_paths(live_server_url, api_key, api):
    result = run_scenario("suggestions_client", live_server_url, api_key)

    listed = api.get(f"/threads/{result['threadId']}/messages/{result['messageId']}/suggestions").json()
    assert [s["id"] for s in listed] == result["suggestionIds"]
