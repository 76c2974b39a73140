"""How many SQL statements a run costs (docs/protocol.md#design-for-scale: a few database calls per run).

The run is driven in-process through Django's AsyncClient, so every statement the run path sends
through the database worker threads is counted (tests/support/statements.py), auth included.
Measured when written: 9 for a plain run on a new or an existing thread, 9 + 10 for a client-tool
round trip (the answer also closes the paused run).
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


@pytest.fixture
def fast_offline(settings, api_key):
    from django.utils import timezone

    from projects.models import ApiKey

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
    assert len(log) <= PLAIN_RUN_BUDGET, str(log)


def test_a_plain_run_on_an_existing_thread_stays_within_budget(transactional_db, api_key, fast_offline):
    headers, _ = _stream(api_key, "/v1/threads/runs", _body("hello"))
    thread_id, first_run = headers["X-Thread-Id"], headers["X-Run-Id"]
    with counting_statements() as log:
        _, events = _stream(api_key, f"/v1/threads/{thread_id}/runs", _body("again", previousRunId=first_run))
    assert events[-1]["type"] == "RUN_FINISHED"
    assert len(log) <= PLAIN_RUN_BUDGET, str(log)


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
    assert len(log) - paused <= PLAIN_RUN_BUDGET, str(log)
