"""A background run joined with the official `@tambo-ai/client` (docs/protocol.md#background-runs).

The official clients have no resume of their own: an app built on `@tambo-ai/client` (whose reducer,
`streamReducer`, `@tambo-ai/react` applies events with) follows a run it did not start by loading the
thread and applying the run's events from the first (`tests/compat/follow.mjs`). A background run is
started (the body's `background: true`, or `Prefer: respond-async`), answered 202 and its connection
closed. Mid-answer, two apps join it (started before it and told when: Node takes seconds to start on a
busy machine): one loads the thread as stored, one the thread as it was when the run started (up to
its user message); after its end, a third replays it on the latter (on the stored
thread the reducer, which only adds, would append the answer to itself). Each time the client's final
messages must be the stored thread's, and the reducer must have thrown nothing (a throw fails the
scenario).

One process, so these run on SQLite too.
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest
import requests

from tests.runs.test_background import events, wait_run
from tests.runs.test_takeover_official_client import shown
from tests.support import node
from tests.support.sse import iter_frames

pytestmark = pytest.mark.both_dbs

# Paced, so that the clients told to join after the first deltas have seconds to spare on a busy machine.
DELTAS = 50
PACED = f"!stream {DELTAS} every 0.3"


def start_background(runs, api, api_key: str, case: str) -> tuple[str, str]:
    """Starts a paced background run on a connection of its own, closed once the 202 is read: (thread
    id, run id)."""
    thread_id = None
    extra, headers = {"background": True}, {}
    if case == "Prefer header":
        thread_id, first = runs.run_new("hello")
        extra, headers = {"previousRunId": first[0]["runId"]}, {"Prefer": "respond-async"}
    path = "/v1/threads/runs" if thread_id is None else f"/v1/threads/{thread_id}/runs"
    with requests.Session() as session:
        response = session.post(api.base_url + path, json=runs.body(PACED, **extra),
                                headers={"x-api-key": api_key, **headers}, timeout=30)
        assert response.status_code == 202, response.text
        started = response.json()
    assert started["status"] == "streaming"
    return started["threadId"], started["id"]


def read_deltas(api, thread_id: str, run_id: str, count: int) -> None:
    """Reads the run's events until `count` text deltas have come, then leaves."""
    reader = events(api, thread_id, run_id)
    seen = 0
    for _, event in iter_frames(reader):
        seen += event["type"] == "TEXT_MESSAGE_CONTENT"
        if seen == count:
            break
    reader.close()
    assert seen == count


def ready_follower(base_url: str, api_key: str) -> subprocess.Popen:
    """follow.mjs with Node and the packages loaded, waiting for the run to follow (FOLLOW_ON_STDIN)."""
    env = {**os.environ, "TAMBO_URL": base_url, "TAMBO_API_KEY": api_key, "TAMBO_USER_KEY": node.USER_KEY,
           "FOLLOW_ON_STDIN": "1", "COMPAT_SCENARIO_TIMEOUT_MS": "100000"}
    process = subprocess.Popen([node.node_for(node.COMPAT_DIR, "@tambo-ai/client"), "follow.mjs", "follow"],
                               cwd=node.COMPAT_DIR, env=env, text=True,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ready = process.stdout.readline()
    if not ready.startswith("{"):
        process.kill()
        pytest.fail(f"follow.mjs did not get ready: {ready}{process.communicate()[1]}")
    assert json.loads(ready) == {"ready": True}
    return process


def join(process: subprocess.Popen, thread_id: str, run_id: str, load_until: str | None = None) -> None:
    target = {"TAMBO_THREAD_ID": thread_id, "TAMBO_RUN_ID": run_id}
    if load_until:
        target["TAMBO_LOAD_UNTIL"] = load_until
    process.stdin.write(json.dumps(target) + "\n")
    process.stdin.flush()


def result_of(process: subprocess.Popen) -> dict:
    try:
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    return node.scenario_result(subprocess.CompletedProcess(process.args, process.returncode, out, err), "follow")


def follow(base_url: str, api_key: str, thread_id: str, run_id: str, load_until: str | None = None) -> dict:
    env = {"TAMBO_THREAD_ID": thread_id, "TAMBO_RUN_ID": run_id, "COMPAT_SCENARIO_TIMEOUT_MS": "100000"}
    if load_until:
        env["TAMBO_LOAD_UNTIL"] = load_until
    done = node.run_node(node.COMPAT_DIR, "@tambo-ai/client", ["follow.mjs", "follow"], base_url, api_key, env)
    return node.scenario_result(done, "follow")


def assert_shows_the_stored_thread(result: dict, stored: dict) -> None:
    assert result["types"][0] == "RUN_STARTED" and result["types"][-1] == "RUN_FINISHED", result["types"]
    assert result["status"] == "idle" and result["warnings"] == []
    client_messages, client_results = shown(result["messages"])
    stored_messages, stored_results = shown(stored["messages"])
    assert client_messages == stored_messages
    assert client_results == stored_results


def last_user_message(api, thread_id: str) -> str:
    return [m["id"] for m in api.thread(thread_id)["messages"] if m["role"] == "user"][-1]


@pytest.mark.parametrize("case", ["background body", "Prefer header"])
def test_the_official_client_joins_a_background_run_mid_answer_and_after_its_end(runs, api, api_key, case):
    # Two apps, ready before the run: one will load the thread as stored, one as it was when the run started.
    apps = [ready_follower(api.base_url, api_key) for _ in range(2)]
    try:
        thread_id, run_id = start_background(runs, api, api_key, case)
        # Mid-answer: the apps join once the run has streamed three deltas with no reader.
        read_deltas(api, thread_id, run_id, 3)
        asked = last_user_message(api, thread_id)  # the run's, stored when it started
        join(apps[0], thread_id, run_id)
        join(apps[1], thread_id, run_id, load_until=asked)
        live = [result_of(app) for app in apps]
    finally:
        for app in apps:
            if app.poll() is None:
                app.kill()

    run = wait_run(api, thread_id, run_id, timeout=60)
    assert run["status"] == "completed", run
    stored = api.thread(thread_id)
    ids = [m["id"] for m in stored["messages"]]
    before = ids[:ids.index(asked) + 1]
    answer = shown(stored["messages"])[0][-1]
    assert answer[1] == "assistant" and answer[2] == "".join(f"w{i} " for i in range(DELTAS))
    for result in live:
        # It loaded the thread before the answer was stored: it joined the run in flight.
        assert result["loaded"] == before
        assert_shows_the_stored_thread(result, stored)

    # After its end: a replay of every event, on the thread as it was when the run started.
    replay = follow(api.base_url, api_key, thread_id, run_id, load_until=asked)
    assert replay["loaded"] == before
    assert replay["types"] == live[0]["types"]
    assert_shows_the_stored_thread(replay, api.thread(thread_id))
    assert api.get(f"/v1/threads/{thread_id}/runs/{run_id}").json()["status"] == "completed"
    # Why from there: replayed on the stored thread, the answer shows twice in its own message.
    doubled = follow(api.base_url, api_key, thread_id, run_id)
    assert doubled["loaded"] == ids and shown(doubled["messages"])[0][-1][2] == answer[2] * 2
