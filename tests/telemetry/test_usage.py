"""The usage record of a run (docs/abuse-and-limits.md): one row per run, written with the run's end, with
its tokens, time to first token, duration and outcome; and the selector that sums them."""
from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from tests.runs.conftest import WEATHER_TOOL

pytestmark = pytest.mark.both_dbs


def _usage(run_id: str):
    from telemetry.models import Usage

    return Usage.objects.get(run_id=run_id)


def _run_row(run_id: str):
    from runs.models import Run

    return Run.objects.get(id=run_id)


def test_a_completed_run_records_its_tokens_times_and_outcome(runs):
    thread_id, events = runs.run_new("hello there")
    run_id = events[0]["runId"]
    usage, run = _usage(run_id), _run_row(run_id)
    assert (usage.kind, usage.outcome, usage.thread_id, usage.user_key) == ("run", "completed", thread_id, "alice")
    assert (usage.model, usage.provider) == ("offline", "offline")
    assert usage.output_tokens == run.usage["completion_tokens"] > 0
    assert usage.input_tokens == run.usage["prompt_tokens"]
    assert usage.ttft_ms is not None and usage.duration_ms is not None
    assert usage.duration_ms >= usage.ttft_ms
    assert usage.project.name == "test-project"


def test_a_failed_run_records_its_error_code(runs):
    _, events = runs.run_new("!fail please")
    assert events[-1]["type"] == "RUN_ERROR"
    usage = _usage(events[0]["runId"])
    assert (usage.outcome, usage.error_code) == ("failed", "LLM_SERVER_ERROR")


def test_a_paused_run_is_recorded_as_awaiting_input(runs):
    _, events = runs.run_new('Use get_weather {"city": "Paris"}', tools=[WEATHER_TOOL])
    assert _usage(events[0]["runId"]).outcome == "awaiting_input"


def test_usage_total_sums_a_users_runs_since_a_time(runs, project):
    from telemetry.usage import usage_total

    before = timezone.now() - dt.timedelta(seconds=1)
    first = runs.run_new("one")[1][0]["runId"]
    second = runs.run_new("two two")[1][0]["runId"]
    total = usage_total(project_id=project.id, since=before, user_key="alice")
    assert total.runs == total.calls == 2
    assert total.output_tokens == _usage(first).output_tokens + _usage(second).output_tokens
    assert usage_total(project_id=project.id, since=before, user_key="bob").runs == 0
    assert usage_total(project_id=project.id, since=timezone.now() + dt.timedelta(seconds=5)).runs == 0


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_gateway_completion_records_its_usage(api, stream):
    from telemetry.models import Usage

    response = api.post("/api/chat/completions", {"model": "offline", "stream": stream,
                                                  "messages": [{"role": "user", "content": "hello gateway"}]})
    assert response.status_code == 200
    response.content  # the whole answer: the call is recorded when its deltas end
    usage = Usage.objects.get(kind="gateway")
    assert (usage.outcome, usage.model, usage.provider) == ("completed", "offline", "offline")
    assert usage.output_tokens > 0 and usage.run_id is None and usage.duration_ms is not None


def test_a_failed_gateway_completion_is_recorded_as_failed(api):
    from telemetry.models import Usage

    response = api.post("/api/chat/completions", {"model": "offline",
                                                  "messages": [{"role": "user", "content": "!fail"}]})
    assert response.status_code >= 500
    usage = Usage.objects.get(kind="gateway")
    assert (usage.outcome, usage.error_code) == ("failed", "LLM_SERVER_ERROR")

