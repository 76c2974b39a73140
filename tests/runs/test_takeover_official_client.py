"""A run taken over while the official `@tambo-ai/client` follows it: what the client shows is the stored thread.

The client's reducer (`streamReducer`, the one `@tambo-ai/react` applies events with) ignores
MESSAGES_SNAPSHOT and never removes what it shows, so the takeover carries the step in flight on
under the ids the client saw (runs/carry.py). `tests/compat/follow.mjs` follows the run through the
surviving process with that reducer, from the thread's stored messages; the process streaming the run
is killed (`kill -9`) mid-answer; the client's final messages must equal the stored thread's.
"""
from __future__ import annotations

import json
import os
import subprocess
import threading
import time

import pytest

from runs.models import Run
from tests.conftest import Api
from tests.runs.test_takeover import LONG, start, two_servers
from tests.support import node

pytestmark = [pytest.mark.django_db(transaction=True)]


def follow_killing(a, b, api_key: str, thread_id: str, run_id: str, *, after_deltas: int) -> dict:
    """Runs follow.mjs through `b`; kills `a` once the client has applied `after_deltas` text deltas."""
    env = {"TAMBO_THREAD_ID": thread_id, "TAMBO_RUN_ID": run_id, "COMPAT_SCENARIO_TIMEOUT_MS": "150000"}
    follower = subprocess.Popen(
        [node.node_for(node.COMPAT_DIR, "@tambo-ai/client"), "follow.mjs", "follow"], cwd=node.COMPAT_DIR,
        env={**os.environ, "TAMBO_URL": b.url, "TAMBO_API_KEY": api_key, "TAMBO_USER_KEY": "alice", **env},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        for line in follower.stdout:
            lines.append(line)
            if json.loads(line).get("progress") == after_deltas:
                break
        a.process.kill()  # kill -9 mid-answer: nothing released, the step in flight never stored
        a.process.wait()
        out, err = follower.communicate(timeout=170)
    finally:
        if follower.poll() is None:
            follower.kill()
    done = subprocess.CompletedProcess(follower.args, follower.returncode, "".join(lines) + out, err)
    return node.scenario_result(done, "follow")


def shown(messages: list[dict]) -> tuple[list[tuple], dict[str, str]]:
    """(user and assistant messages as (id, role, text, tool calls), {tool call id: result text}) of
    messages in Tambo's shape, wherever a result is (its own message, or a block of its step's)."""
    out, results = [], {}
    for m in messages:
        for b in m["content"]:
            if b["type"] == "tool_result":
                results[b["toolUseId"]] = "".join(c.get("text", "") for c in b["content"])
        # A stored result is a message of its own (GET shows it so); a live client adds it to its step's.
        if m["role"] in ("user", "assistant") and any(b["type"] != "tool_result" for b in m["content"]):
            text = "".join(b["text"] for b in m["content"] if b["type"] == "text")
            calls = [(b["id"], b["name"], b["input"]) for b in m["content"] if b["type"] == "tool_use"]
            out.append((m["id"], m["role"], text, calls))
    return out, results


@pytest.mark.parametrize("case", ["text", "tool arguments", "answer after a tool"])
def test_the_official_client_following_a_run_killed_mid_step_ends_with_the_stored_thread(project, api_key, case):
    from tools.models import ProjectTool

    ProjectTool.objects.create(project=project, name="calculate", enabled=True)
    text, env, after = {
        "text": (LONG, {}, 3),
        # The arguments stream in 8-character pieces; the answer after the result is three deltas.
        "tool arguments": ('Please use calculate with {"expression": "(1 + 2) * 3 + 40 * 5 - 7"}', {}, None),
        "answer after a tool": ('Please use calculate with {"expression": "(1 + 2) * 3 + 40 * 5 - 7"}',
                                {"OFFLINE_MODEL_DELAY": "0.6"}, 1),
    }[case]
    with two_servers(f"takeover-official-{case.replace(' ', '-')}", env) as (a, b):
        _, thread_id, run_id = start(Api(a.url, api_key), text)
        if case == "tool arguments":
            result = _follow_killing_at_arguments(a, b, api_key, thread_id, run_id)
        else:
            result = follow_killing(a, b, api_key, thread_id, run_id, after_deltas=after)
        stored = Api(b.url, api_key).thread(thread_id)

    run = Run.objects.get(id=run_id)
    assert run.status == Run.Status.COMPLETED and run.takeover_count == 1, (run.status, run.error_message)
    assert result["types"][-1] == "RUN_FINISHED" and result["status"] == "idle"
    client_messages, client_results = shown(result["messages"])
    stored_messages, stored_results = shown(stored["messages"])
    assert client_messages == stored_messages
    assert client_results == stored_results
    assistant = [m for m in stored_messages if m[1] == "assistant"]
    assert sum(m[2].count("(offline model)") + m[2].count("Tool calculate returned") for m in assistant) == 1
    if case != "text":
        assert [len(m[3]) for m in assistant] == [1, 0] and stored_results == {assistant[0][3][0][0]: "202"}


def _follow_killing_at_arguments(a, b, api_key: str, thread_id: str, run_id: str) -> dict:
    """As follow_killing, the kill once the event log holds an argument delta of the call (no text
    comes before it)."""
    from django.db import connection

    from runs.models import RunEvent

    def kill_at_arguments() -> None:
        try:
            deadline = time.monotonic() + 60
            while not RunEvent.objects.filter(run_id=run_id, data__startswith='{"type":"TOOL_CALL_ARGS"').exists():
                if time.monotonic() > deadline:
                    return
                time.sleep(0.05)
            a.process.kill()
            a.process.wait()
        finally:
            connection.close()

    killer = threading.Thread(target=kill_at_arguments, daemon=True)
    killer.start()
    env = {"TAMBO_THREAD_ID": thread_id, "TAMBO_RUN_ID": run_id, "COMPAT_SCENARIO_TIMEOUT_MS": "150000"}
    done = node.run_node(node.COMPAT_DIR, "@tambo-ai/client", ["follow.mjs", "follow"], b.url, api_key, env)
    killer.join(5)
    return node.scenario_result(done, "follow")
