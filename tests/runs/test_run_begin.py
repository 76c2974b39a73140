"""The one run start (runs/begin.py `run_begin`, docs/architecture.md#one-of-each-bounded-under-failure):
every entrance goes through it, none applies a rule of its own, and a refused start keeps none of the
tokens its admission reserved.

Driven in-process through Django's AsyncClient with the offline model, so a spy on `run_begin` sees
every start whichever database worker thread runs it.
"""
from __future__ import annotations

import ast
import json
import uuid
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient

from projects.config import Limits, ProjectSettings, project_settings_save
from projects.limit_models import LimitCounter
from runs import begin
from runs.lock import lock_held
from runs.models import Run
from tests.runs.conftest import WEATHER_TOOL, tool_result
from tests.support.sse import decode_events

pytestmark = pytest.mark.both_dbs

ROOT = Path(__file__).resolve().parents[2]
# What only the one start may do: the rules, the lock, the turn's storage and the run's telemetry.
RULES = {"call_admit", "run_admit", "model_chain_for", "run_model_rules", "run_budget", "check_new_message", "run_reservation",
         "lock_held", "lock_hold_new", "thread_lock", "turn_store", "history_after_lock", "run_meter_start",
         "thread_create"}


def _post(api_key: str, path: str, body: dict) -> tuple[int, dict, list[dict] | dict]:
    async def go():
        response = await AsyncClient().post(path, json.dumps(body), content_type="application/json",
                                            headers={"x-api-key": api_key})
        if response.status_code != 200 or not response.streaming:
            return response.status_code, dict(response.headers), response.content
        raw = b"".join([chunk async for chunk in response.streaming_content])
        return response.status_code, dict(response.headers), raw

    status, headers, raw = async_to_sync(go)()
    answer = list(decode_events([raw])) if status == 200 else json.loads(raw)
    return status, headers, answer


def _v1(text_or_message, **extra) -> dict:
    message = text_or_message if isinstance(text_or_message, dict) else {
        "role": "user", "content": [{"type": "text", "text": text_or_message}]}
    return {"userKey": "alice", "message": message, **extra}


def _agui(thread_id: str, text: str, user_key: str = "alice") -> dict:
    return {"threadId": thread_id, "runId": f"r-{uuid.uuid4()}", "protocolVersion": "1.0", "tools": [], "context": [],
            "messages": [{"id": f"u-{uuid.uuid4()}", "role": "user", "content": text}], "state": {},
            "forwardedProps": {"userKey": user_key}}


@pytest.fixture
def starts(monkeypatch) -> list[str]:
    """The entrance of each start `run_begin` made (the adapter's request type)."""
    seen: list[str] = []
    real = begin.run_begin

    def spy(request):
        seen.append(type(request).__name__)
        return real(request)

    monkeypatch.setattr("runs.services.run_begin", spy)
    monkeypatch.setattr("runs.agui.services.run_begin", spy)
    return seen


def test_every_entrance_starts_its_run_through_run_begin(transactional_db, api_key, offline, starts):
    status, headers, events = _post(api_key, "/v1/threads/runs", _v1('Use get_weather {"city": "Paris"}',
                                                                      tools=[WEATHER_TOOL]))
    assert status == 200, events
    thread_id, paused = headers["X-Thread-Id"], headers["X-Run-Id"]
    awaiting = [e for e in events if e.get("name") == "tambo.run.awaiting_input"][0]
    call_id = awaiting["value"]["pendingToolCalls"][0]["toolCallId"]
    # The tool-result continuation, then a plain run on the same thread.
    status, headers, events = _post(api_key, f"/v1/threads/{thread_id}/runs",
                                    _v1({"role": "user", "content": [tool_result(call_id, "sunny")]},
                                        previousRunId=paused, tools=[WEATHER_TOOL]))
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED", events
    status, _, events = _post(api_key, f"/v1/threads/{thread_id}/runs",
                              _v1("again", previousRunId=headers["X-Run-Id"]))
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED", events
    # AG-UI: the client's own thread id (created on first use, then found), and the server's.
    for thread in ("client-thread", "client-thread", thread_id):
        status, _, events = _post(api_key, "/v1/agui", _agui(thread, "hello"))
        assert status == 200 and events[-1]["type"] == "RUN_FINISHED", events

    assert starts == ["_V1Request"] * 3 + ["_AguiRequest"] * 3


@pytest.mark.parametrize("module", ["runs/services.py", "runs/agui/services.py", "runs/start.py"])
def test_no_entrance_applies_a_rule_of_its_own(module):
    # The entrances' adapters read their wire shapes; the rules are run_begin's alone.
    tree = ast.parse((ROOT / module).read_text())
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    used |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    used |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert used & RULES == set()


def _reserved_tokens() -> int:
    return sum(LimitCounter.objects.filter(kind="tokens").values_list("count", flat=True))


@pytest.fixture
def budgeted(project):
    project_settings_save(project, ProjectSettings(limits=Limits(runs_per_minute=0, tokens_per_day=100_000)))


def test_a_start_refused_after_admission_gives_its_reservation_back(transactional_db, api_key, project, offline,
                                                                    budgeted):
    status, headers, events = _post(api_key, "/v1/threads/runs", _v1("hello"))
    assert status == 200 and events[-1]["type"] == "RUN_FINISHED", events
    thread_id, run_id = headers["X-Thread-Id"], headers["X-Run-Id"]
    spent = _reserved_tokens()

    # Refused by the thread's checks (400), by the lock (409) and by the scope (404), each after its
    # admission reserved the run's worst case.
    status, _, problem = _post(api_key, f"/v1/threads/{thread_id}/runs", _v1("again", previousRunId="run_nope"))
    assert (status, problem["code"]) == (400, "INVALID_PREVIOUS_RUN")
    with lock_held(thread_id=thread_id, run_id="run_holder") as locked:
        Run.objects.create(id="run_holder", thread=locked)
    status, _, problem = _post(api_key, f"/v1/threads/{thread_id}/runs", _v1("again", previousRunId=run_id))
    assert (status, problem["code"]) == (409, "CONCURRENT_RUN")
    status, _, problem = _post(api_key, "/v1/agui", _agui(thread_id, "hello", user_key="bob"))
    assert (status, problem["code"]) == (404, "THREAD_NOT_FOUND")

    assert _reserved_tokens() == spent


def test_a_started_run_s_telemetry_starts_once_by_the_start(transactional_db, api_key, offline, monkeypatch):
    # Started by run_begin's call, not by building the StartedRun it returns.
    started: list[str] = []
    real = begin.run_meter_start
    monkeypatch.setattr(begin, "run_meter_start", lambda **kw: (started.append(kw["run"].id), real(**kw))[1])

    status, headers, events = _post(api_key, "/v1/threads/runs", _v1("hello"))

    assert status == 200 and events[-1]["type"] == "RUN_FINISHED", events
    assert started == [headers["X-Run-Id"]]
