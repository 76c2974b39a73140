"""Projects own their models: each project's runs go to its own provider, endpoint and key in one
server process; fallbacks before the first delta; bounded choices; a missing env: key is a clear
RUN_ERROR (docs/models.md)."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from runs.models import Run
from tests.models.conftest import (ANTHROPIC_KEY, OPENAI_KEY, anthropic_model, apply_file, openai_model,
                                   project_runs)
from tests.runs.conftest import event_of, text_of
from tests.support.fake_openai import Drop, HTTPError, Text

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_projects_on_two_vendors_stream_side_by_side_each_with_its_own_key(tmp_path, models_url, oai, ant):
    apply_file(tmp_path, f"""
projects:
  - name: on-openai
    models: [{openai_model(oai.fake)}]
  - name: on-anthropic
    models: [{anthropic_model(ant.fake)}]
""")
    oai.script(Text(["From ", "OpenAI"], delay=0.05))
    ant.script(Text(["From ", "Claude"], delay=0.05))
    first, second = project_runs(models_url, "on-openai"), project_runs(models_url, "on-anthropic")
    with ThreadPoolExecutor(2) as pool:
        a, b = pool.submit(first.run_new, "hi"), pool.submit(second.run_new, "hello")
        (_, openai_events), (_, anthropic_events) = a.result(), b.result()
    assert text_of(openai_events) == "From OpenAI" and text_of(anthropic_events) == "From Claude"
    (to_openai,) = oai.requests
    (to_anthropic,) = ant.requests
    assert to_openai.api_key == OPENAI_KEY and to_openai.body["model"] == "gpt-fake"
    assert to_anthropic.api_key == ANTHROPIC_KEY and to_anthropic.body["model"] == "claude-fake"
    assert to_anthropic.path == "/v1/messages"
    assert to_anthropic.body["messages"][-1] == {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    assert Run.objects.get(id=openai_events[0]["runId"]).answered_model == "openai:gpt-fake"
    assert Run.objects.get(id=anthropic_events[0]["runId"]).answered_model == "anthropic:claude-fake"
    assert OPENAI_KEY not in json.dumps(openai_events) and ANTHROPIC_KEY not in json.dumps(anthropic_events)


def test_a_model_that_fails_before_its_first_delta_falls_back_within_the_same_run(tmp_path, models_url, oai, ant):
    apply_file(tmp_path, f"""
projects:
  - name: with-fallback
    models: [{anthropic_model(ant.fake)}, {openai_model(oai.fake)}]
""")
    ant.script(HTTPError(529))
    oai.script(Text("The fallback answered."))
    thread_id, events = project_runs(models_url, "with-fallback").run_new("hi")
    assert text_of(events) == "The fallback answered." and events[-1]["type"] == "RUN_FINISHED"
    assert [e["type"] for e in events].count("RUN_STARTED") == 1
    run = Run.objects.get(id=events[0]["runId"])
    assert run.answered_model == "openai:gpt-fake"
    assert run.model_fallbacks == [{"from": "anthropic:claude-fake", "to": "openai:gpt-fake", "code": "LLM_SERVER_ERROR"}]


def test_a_client_error_does_not_fall_back(tmp_path, models_url, oai, ant):
    apply_file(tmp_path, f"""
projects:
  - name: no-fallback-on-400
    models: [{anthropic_model(ant.fake)}, {openai_model(oai.fake)}]
""")
    ant.script(HTTPError(400))
    _, events = project_runs(models_url, "no-fallback-on-400").run_new("hi")
    assert event_of(events, "RUN_ERROR")["code"] == "LLM_CLIENT_ERROR" and oai.requests == []


def test_a_failure_after_the_first_delta_ends_the_run_without_fallback(tmp_path, models_url, oai, ant):
    apply_file(tmp_path, f"""
projects:
  - name: late-failure
    models: [{anthropic_model(ant.fake)}, {openai_model(oai.fake)}]
""")
    ant.script(Drop(after=["Half an ans"]))
    runs = project_runs(models_url, "late-failure")
    thread_id, events = runs.run_new("hi")
    assert text_of(events) == "Half an ans"
    assert event_of(events, "RUN_ERROR")["code"] == "LLM_SERVER_ERROR" and oai.requests == []
    assert runs.wait_idle(thread_id)["runStatus"] == "idle"


def test_a_model_the_project_does_not_offer_is_refused_and_an_allowed_one_reaches_its_endpoint(
        tmp_path, models_url, oai, ant):
    apply_file(tmp_path, f"""
projects:
  - name: bounded
    models: [{anthropic_model(ant.fake)}, {openai_model(oai.fake)}]
    allowedModels: [claude-cheaper]
    maxOutputTokens: 500
""")
    runs = project_runs(models_url, "bounded")
    refused = runs.post_new("hi", model="gpt-expensive")
    assert refused.status_code == 400 and refused.headers["Content-Type"] == "application/problem+json"
    problem = refused.json()
    assert problem["code"] == "MODEL_NOT_ALLOWED"
    assert problem["allowedModels"] == ["claude-fake", "gpt-fake", "claude-cheaper"]
    ant.script(Text("ok"))
    runs.run_new("hi", model="claude-cheaper", maxTokens=100_000)
    oai.script(Text("ok"))
    runs.run_new("hi", model="gpt-fake", maxTokens=10)
    (cheaper,) = ant.requests
    (chosen,) = oai.requests
    assert cheaper.body["model"] == "claude-cheaper" and cheaper.body["max_tokens"] == 500  # capped
    assert chosen.body["model"] == "gpt-fake" and chosen.body["max_tokens"] == 10


def test_parameters_merge_run_over_project(tmp_path, models_url, oai, ant):
    apply_file(tmp_path, f"""
projects:
  - name: tuned
    models: [{openai_model(oai.fake)}]
    parameters: {{temperature: 0.3, top_p: 0.9, seed: 7}}
""")
    runs = project_runs(models_url, "tuned")
    oai.script(Text("ok"), Text("ok"))
    _, events = runs.run_new("hi")
    runs.run_new("hi", temperature=1.0)
    first, second = oai.requests
    assert (first.body["temperature"], first.body["top_p"], first.body["seed"]) == (0.3, 0.9, 7)
    assert second.body["temperature"] == 1.0 and second.body["top_p"] == 0.9


def test_a_missing_env_key_is_a_run_error_naming_the_variable_and_the_thread_stays_usable(
        tmp_path, models_url, oai, ant):
    apply_file(tmp_path, f"""
projects:
  - name: misconfigured
    models: [{openai_model(oai.fake, key="env:NOT_SET_ANYWHERE")}]
""")
    runs = project_runs(models_url, "misconfigured")
    thread_id, events = runs.run_new("hi")
    error = event_of(events, "RUN_ERROR")
    assert error["code"] == "MISSING_ENV_VARIABLE" and "NOT_SET_ANYWHERE" in error["message"]
    assert oai.requests == []
    assert runs.wait_idle(thread_id)["runStatus"] == "idle"
    apply_file(tmp_path, f"""
projects:
  - name: misconfigured
    models: [{openai_model(oai.fake)}]
""")
    oai.script(Text("fixed"))
    events = runs.run(thread_id, "again", previousRunId=events[0]["runId"])
    assert text_of(events) == "fixed"
