"""GET /metrics: protected by METRICS_TOKEN, Prometheus text, bounded labels, no statement."""
from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient

from providers import reset_providers
from telemetry.metrics import MAX_MODEL_LABELS
from tests.support.sse import decode_events

TOKEN = "scrape-secret-1"


@pytest.fixture
def metrics_on(settings):
    settings.METRICS_TOKEN = TOKEN
    settings.MODEL_PROVIDER = "offline"
    settings.OFFLINE_MODEL_DELAY = 0.0
    reset_providers()
    yield
    reset_providers()


def _get(path: str, **headers):
    async def go():
        return await AsyncClient().get(path, headers=headers)

    return async_to_sync(go)()


def _run(api_key: str, text: str) -> list[dict]:
    async def go():
        response = await AsyncClient().post("/v1/threads/runs", json.dumps(
            {"userKey": "u-secret-user", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}),
            content_type="application/json", headers={"x-api-key": api_key})
        return b"".join([chunk async for chunk in response.streaming_content])

    return list(decode_events([async_to_sync(go)()]))


def _sample(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_it_is_not_served_without_a_token_configured(transactional_db, settings):
    settings.METRICS_TOKEN = ""
    response = _get("/metrics")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"


def test_it_refuses_a_missing_or_wrong_bearer_token(transactional_db, metrics_on):
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        response = _get("/metrics", **headers)
        assert response.status_code == 401
        assert response["Content-Type"] == "application/problem+json"
        assert response.json()["code"] == "UNAUTHORIZED"


def test_a_run_moves_the_run_token_and_request_series(transactional_db, metrics_on, api_key):
    before = _get("/metrics", Authorization=f"Bearer {TOKEN}").content.decode()
    events = _run(api_key, "hello metrics")
    assert events[-1]["type"] == "RUN_FINISHED"
    after = _get("/metrics", Authorization=f"Bearer {TOKEN}")
    assert after.status_code == 200 and after["Content-Type"].startswith("text/plain")
    text = after.content.decode()
    labels = {"project": "test-project", "model": "offline"}
    assert _sample(text, "tambo_runs_total", outcome="completed", **labels) == \
        _sample(before, "tambo_runs_total", outcome="completed", **labels) + 1
    assert _sample(text, "tambo_run_duration_seconds_count", **labels) == \
        _sample(before, "tambo_run_duration_seconds_count", **labels) + 1
    assert _sample(text, "tambo_tokens_total", type="output", **labels) > \
        _sample(before, "tambo_tokens_total", type="output", **labels)
    assert _sample(text, "tambo_http_requests_total", route="/v1/threads/runs", status="200") >= 1
    # Labels are bounded: no user key, thread id, run id or text in any series.
    thread_id, run_id = events[0]["threadId"], events[0]["runId"]
    for secret in ("u-secret-user", thread_id, run_id, "hello metrics"):
        assert secret not in text


def test_tool_calls_are_counted_by_kind_and_outcome(transactional_db, metrics_on, api_key, project):
    from tools.models import ProjectTool

    ProjectTool.objects.create(project=project, name="calculate")
    before = _get("/metrics", Authorization=f"Bearer {TOKEN}").content.decode()
    assert _run(api_key, 'calculate {"expression": "1+1"}')[-1]["type"] == "RUN_FINISHED"
    assert _run(api_key, 'calculate {"expression": "1/0"}')[-1]["type"] == "RUN_FINISHED"
    text = _get("/metrics", Authorization=f"Bearer {TOKEN}").content.decode()
    for outcome in ("ok", "error"):
        labels = {"project": "test-project", "kind": "server", "outcome": outcome}
        assert _sample(text, "tambo_tool_calls_total", **labels) == _sample(before, "tambo_tool_calls_total",
                                                                            **labels) + 1


def test_metrics_port_serves_the_series_on_a_port_of_its_own(transactional_db):
    import requests

    from tests.support.live import LiveServer, free_port

    port = free_port()
    server = LiveServer("metrics-port", {"METRICS_PORT": str(port)})
    try:
        assert requests.get(server.url + "/healthz", timeout=10).status_code == 200
        answer = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
        assert answer.status_code == 200 and "tambo_http_requests_total" in answer.text
        assert requests.get(server.url + "/metrics", timeout=10).status_code == 404  # not on the main port
    finally:
        server.stop()


def _run_model(api_key: str, model: str) -> list[dict]:
    async def go():
        response = await AsyncClient().post("/v1/threads/runs", json.dumps(
            {"userKey": "u1", "model": model, "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}),
            content_type="application/json", headers={"x-api-key": api_key})
        return b"".join([chunk async for chunk in response.streaming_content])

    return list(decode_events([async_to_sync(go)()]))


def _models_of(text: str, project: str) -> set[str]:
    return {line.split('model="', 1)[1].split('"', 1)[0] for line in text.splitlines()
            if line.startswith("tambo_runs_total{") and f'project="{project}"' in line}


INVENTED = 2 * MAX_MODEL_LABELS  # 100; 500 until the cap's rule was by name (telemetry/metrics.py)


def test_client_chosen_model_names_do_not_become_labels(transactional_db, metrics_on, project, api_key):
    import secrets

    from projects.config import Limits, ProjectSettings, project_settings_save
    from projects.models import ApiKey, Project

    # A copied key sends twice as many invented model names as a process has named series
    # (MAX_MODEL_LABELS) to a project that lets any name through (`*`: a project nobody configured
    # refuses them, docs/abuse-and-limits.md#safe-defaults) with no run rate: first-come slots would be
    # full before the real model below comes, and any invented name with a series of its own fails.
    project_settings_save(project, ProjectSettings(allowed_models=["*"], limits=Limits(runs_per_minute=0)))
    for _ in range(INVENTED):
        events = _run_model(api_key, "m-" + secrets.token_hex(6))
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    # Then a project that offers a real model runs it.
    real = Project.objects.create(name="offers-real-model")
    project_settings_save(real, ProjectSettings(allowed_models=["real-model-1"]))
    _, real_key = ApiKey.generate(real, "tests")
    assert _run_model(real_key, "real-model-1")[-1]["type"] == "RUN_FINISHED"

    text = _get("/metrics", Authorization=f"Bearer {TOKEN}").content.decode()
    # One series for all the invented names, none of their own; the real model keeps its name.
    # (the server's own model may have a series from this module's other runs)
    assert _models_of(text, "test-project") - {"offline"} == {"other"}
    assert _models_of(text, "offers-real-model") == {"real-model-1"}
    assert _sample(text, "tambo_runs_total", project="test-project", model="other") >= INVENTED
