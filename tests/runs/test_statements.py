"""How many SQL statements a run costs (docs/protocol.md#design-for-scale: a few database calls per run).

The run is driven in-process through Django's AsyncClient, so every statement the run path sends
through the database worker threads is counted (tests/support/statements.py), auth included.
Measured when written: 9 for a plain run on a new or an existing thread, 9 + 10 for a client-tool
round trip (the answer also closes the paused run). Since the lean run path (issue 27): a new
thread's run is 7 on SQLite and 6 on PostgreSQL (the project's tools come with the key lookup, the
thread is inserted holding its lock, the end of the run is one statement on PostgreSQL), an
existing thread's 9 and 8; a project with server tools costs the same. The usage record of each run
(telemetry/runs.py), one INSERT in the transaction that releases the lock, adds one to each.
"""
from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient

from providers import reset_providers
from tests.runs.conftest import WEATHER_TOOL, tool_result
from tests.support.sse import decode_events
from tests.support.statements import counting_statements

pytestmark = pytest.mark.both_dbs

PLAIN_RUN_BUDGET = 10
# PostgreSQL ends a run in one statement where SQLite needs two (runs/statements.py); the usage
# record is one INSERT more on both.
NEW_THREAD_RUN_BUDGET = {"sqlite": 8, "postgresql": 7}
EXISTING_THREAD_RUN_BUDGET = {"sqlite": 10, "postgresql": 9}
# The answer to a paused run also closes that run: one UPDATE more than a plain run.
CONTINUATION_BUDGET = PLAIN_RUN_BUDGET + 1


def _budget(budgets: dict[str, int]) -> int:
    from django.db import connection

    return budgets[connection.vendor]


@pytest.fixture
def fast_offline(settings, project, api_key):
    from django.utils import timezone

    from projects.config import Limits, ProjectSettings, project_settings_save
    from projects.models import ApiKey

    # The cost of a run on a project with no limits: the server's default run rate (its one admitting
    # statement, docs/abuse-and-limits.md) turned off for this project.
    project_settings_save(project, ProjectSettings(limits=Limits(runs_per_minute=0)))

    # A key's last use is stamped at most once a minute: not part of a run's cost.
    ApiKey.objects.update(last_used_at=timezone.now())
    settings.MODEL_PROVIDER = "offline"
    settings.OFFLINE_MODEL_DELAY = 0.0
    settings.RUN_WATCH_INTERVAL = 60.0  # no watcher tick inside the counted run
    # Nor an event-log write: like the tick, it is one statement per process per interval for all
    # the runs it streams (runs/stream/feeds.py), not a cost of one run.
    settings.RUN_EVENTS_FLUSH_INTERVAL = 60.0
    reset_providers()
    yield
    reset_providers()


def _stream(api_key: str, path: str, body: dict) -> tuple[dict, list[dict]]:
    async def go():
        client = AsyncClient()
        response = await client.post(path, json.dumps(body), content_type="application/json",
                                     headers={"x-api-key": api_key})
        assert response.status_code == 200, response.content
        raw = b"".join([chunk async for chunk in response.streaming_content])
        return dict(response.headers), raw

    headers, raw = async_to_sync(go)()
    events = list(decode_events([raw]))
    return headers, events


def _body(text_or_message, **extra) -> dict:
    message = text_or_message if isinstance(text_or_message, dict) else {
        "role": "user", "content": [{"type": "text", "text": text_or_message}]}
    return {"userKey": "alice", "message": message, **extra}


def test_a_plain_run_on_a_new_thread_stays_within_budget(transactional_db, api_key, fast_offline):
    with counting_statements() as log:
        _, events = _stream(api_key, "/v1/threads/runs", _body("hello"))
    assert events[-1]["type"] == "RUN_FINISHED"
    assert len(log) <= _budget(NEW_THREAD_RUN_BUDGET), str(log)


def test_a_project_s_server_tools_cost_a_new_thread_s_run_no_statement(transactional_db, project, api_key,
                                                                       fast_offline):
    from tools.models import ProjectTool

    ProjectTool.objects.create(project=project, name="current_time")
    with counting_statements() as log:
        _, events = _stream(api_key, "/v1/threads/runs", _body("hello"))
    assert events[-1]["type"] == "RUN_FINISHED"
    # The offline model lists the tools it was offered: the tool was read, with the API key.
    text = "".join(e.get("delta", "") for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert "current_time" in text, text
    assert len(log) <= _budget(NEW_THREAD_RUN_BUDGET), str(log)


def test_a_plain_run_on_an_existing_thread_stays_within_budget(transactional_db, api_key, fast_offline):
    headers, _ = _stream(api_key, "/v1/threads/runs", _body("hello"))
    thread_id, first_run = headers["X-Thread-Id"], headers["X-Run-Id"]
    with counting_statements() as log:
        _, events = _stream(api_key, f"/v1/threads/{thread_id}/runs", _body("again", previousRunId=first_run))
    assert events[-1]["type"] == "RUN_FINISHED"
    assert len(log) <= _budget(EXISTING_THREAD_RUN_BUDGET), str(log)


def test_an_encrypting_project_s_run_costs_no_statement_more(transactional_db, project, api_key, fast_offline,
                                                             settings):
    """The thread's `sealed` flag comes with the locked row: encrypting what a run writes and decrypting
    its history reads nothing more (threads/sealing.py)."""
    from cryptography.fernet import Fernet

    from projects.config import Limits, ProjectSettings, project_settings_save
    from threads.models import Thread

    settings.SECRETS_KEYS = [Fernet.generate_key().decode()]
    project_settings_save(project, ProjectSettings(limits=Limits(runs_per_minute=0), encrypt_content=True))
    with counting_statements() as new:
        headers, _ = _stream(api_key, "/v1/threads/runs", _body("hello"))
    with counting_statements() as existing:
        _, events = _stream(api_key, f"/v1/threads/{headers['X-Thread-Id']}/runs",
                            _body("again", previousRunId=headers["X-Run-Id"]))
    assert events[-1]["type"] == "RUN_FINISHED" and Thread.objects.get(pk=headers["X-Thread-Id"]).sealed
    assert len(new) <= _budget(NEW_THREAD_RUN_BUDGET), str(new)
    assert len(existing) <= _budget(EXISTING_THREAD_RUN_BUDGET), str(existing)


def test_a_plain_run_crosses_to_the_database_twice(transactional_db, api_key, fast_offline, monkeypatch):
    """The start (key, body, lock, input, history) is one database call and the end (the answer, the
    release, the usage row) another, on a new thread and on an existing one (docs/performance.md)."""
    from core import db

    calls: list[str] = []
    real = db._in_worker

    def counted(fn, args, kwargs):
        calls.append(fn.__name__)
        return real(fn, args, kwargs)

    monkeypatch.setattr(db, "_in_worker", counted)
    headers, events = _stream(api_key, "/v1/threads/runs", _body("hello"))
    assert events[-1]["type"] == "RUN_FINISHED"
    assert calls == ["run_start_request", "run_complete"]
    calls.clear()
    _, events = _stream(api_key, f"/v1/threads/{headers['X-Thread-Id']}/runs",
                        _body("again", previousRunId=headers["X-Run-Id"]))
    assert events[-1]["type"] == "RUN_FINISHED"
    assert calls == ["run_start_request", "run_complete"]


def test_a_client_tool_round_trip_stays_within_budget(transactional_db, api_key, fast_offline):
    with counting_statements() as log:
        headers, events = _stream(api_key, "/v1/threads/runs",
                                  _body('Use get_weather {"city": "Paris"}', tools=[WEATHER_TOOL]))
        paused = len(log)
        awaiting = [e for e in events if e.get("name") == "tambo.run.awaiting_input"][0]
        call_id = awaiting["value"]["pendingToolCalls"][0]["toolCallId"]
        answer = {"role": "user", "content": [tool_result(call_id, "sunny")]}
        _, events = _stream(api_key, f"/v1/threads/{headers['X-Thread-Id']}/runs",
                            _body(answer, previousRunId=headers["X-Run-Id"], tools=[WEATHER_TOOL]))
    assert events[-1]["type"] == "RUN_FINISHED"
    assert paused <= PLAIN_RUN_BUDGET, str(log)
    assert len(log) - paused <= CONTINUATION_BUDGET, str(log)


def test_scraping_metrics_adds_no_statement_to_a_run(transactional_db, api_key, fast_offline, settings):
    settings.METRICS_TOKEN = "scrape-token"

    async def scrape():
        response = await AsyncClient().get("/metrics", headers={"Authorization": "Bearer scrape-token"})
        assert response.status_code == 200
        assert b"tambo_runs_total" in response.content

    with counting_statements() as alone:
        _stream(api_key, "/v1/threads/runs", _body("hello"))
    with counting_statements() as scraped:
        async_to_sync(scrape)()
        _stream(api_key, "/v1/threads/runs", _body("hello"))
        async_to_sync(scrape)()
    assert len(scraped) == len(alone), str(scraped)
