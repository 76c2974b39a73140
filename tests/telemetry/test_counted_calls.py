"""What the limits refuse, what the model chain falls back from, and what thread names and
suggestions spend, as a live server's /metrics counts them (docs/operations-telemetry.md), with the
usage rows the short calls leave and the fallback on the admin's thread page."""
from __future__ import annotations

from typing import Iterator

import pytest
import requests

from projects.config import Limits, ProjectSettings, project_settings_save
from tests.assist.conftest import conversation
from tests.assist.test_generate_name import generate_name
from tests.assist.test_suggestions import generate
from tests.conftest import Api
from tests.projects.test_limits import fresh_minute
from tests.support.admin import admin_url
from tests.support.fake_openai import FakeOpenAI, HTTPError, Text
from tests.support.fixtures_openai import vendor_view
from tests.support.live import LiveServer
from tests.support.sse import read_events

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "counted-calls-token"
GATEWAY_RATE = 2
USAGE = {"prompt_tokens": 37, "completion_tokens": 5, "total_tokens": 42}


@pytest.fixture(scope="module")
def vendors() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    with FakeOpenAI() as first, FakeOpenAI() as second:
        yield first, second


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker) -> Iterator[LiveServer]:
    # The server's own model stays the offline one; the projects that need a vendor name the fakes.
    server = LiveServer("counted-calls", {"METRICS_TOKEN": TOKEN, "FAKE_KEY": "sk-fake-counted",
                                          "GATEWAY_RATE_LIMIT_PER_MINUTE": str(GATEWAY_RATE)})
    yield server
    server.stop()


@pytest.fixture
def first(vendors):
    with vendor_view(vendors[0]) as view:
        yield view


@pytest.fixture
def second(vendors):
    with vendor_view(vendors[1]) as view:
        yield view


def scrape(server: LiveServer) -> str:
    response = requests.get(server.url + "/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
    assert response.status_code == 200, response.text
    return response.text


def sample(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def limit(project, **values: int) -> None:
    project_settings_save(project, ProjectSettings(limits=Limits(**values)))


def models(project, *vendors: FakeOpenAI) -> None:
    project_settings_save(project, ProjectSettings.model_validate({"models": [
        {"provider": "openai", "model": f"m-{index}", "baseUrl": vendor.base_url, "apiKey": "env:FAKE_KEY"}
        for index, vendor in enumerate(vendors, start=1)]}))


def run(server: LiveServer, api_key: str, user: str) -> int:
    response = requests.post(server.url + "/v1/threads/runs", stream=True, timeout=60, headers={"x-api-key": api_key},
                             json={"userKey": user, "message": {"role": "user",
                                                                "content": [{"type": "text", "text": "hi"}]}})
    if response.status_code == 200:
        assert list(read_events(response))[-1]["type"] == "RUN_FINISHED"
    return response.status_code


def chat(server: LiveServer, api_key: str) -> int:
    return requests.post(server.url + "/api/chat/completions", timeout=60, headers={"Authorization": f"Bearer {api_key}"},
                         json={"model": "offline", "messages": [{"role": "user", "content": "hi"}]}).status_code


def test_every_kind_of_limit_counts_its_refusals_by_project_and_limit(server, api_key, project):
    before = scrape(server)
    fresh_minute()
    # The project's own rate off (0), not the server's default: its minute starts empty below.
    limit(project, runs_per_minute_per_user=1, runs_per_minute=0)
    user_rate = [run(server, api_key, "alice") for _ in range(3)]
    limit(project, runs_per_minute=1)
    project_rate = [run(server, api_key, user) for user in ("bob", "carol", "dave", "erin")]
    # A budget of one token: the first run is let in and spends more than that.
    limit(project, tokens_per_day_per_user=1, tokens_per_day=10_000)
    user_budget = [run(server, api_key, "frank") for _ in range(2)]
    limit(project, tokens_per_day=1)
    project_budget = [run(server, api_key, "grace")]
    limit(project)
    gateway = [chat(server, api_key) for _ in range(GATEWAY_RATE + 2)]
    after = scrape(server)

    assert user_rate == [200, 429, 429]
    assert project_rate == [200, 429, 429, 429]
    assert user_budget == [200, 429] and project_budget == [429]
    assert gateway == [200] * GATEWAY_RATE + [429, 429]
    counted = {name: sample(after, "tambo_rate_limited_total", project="test-project", limit=name)
               - sample(before, "tambo_rate_limited_total", project="test-project", limit=name)
               for name in ("runs_per_minute_per_user", "runs_per_minute", "tokens_per_day_per_user",
                            "tokens_per_day", "gateway_requests_per_minute")}
    assert counted == {"runs_per_minute_per_user": 2, "runs_per_minute": 3, "tokens_per_day_per_user": 1,
                       "tokens_per_day": 1, "gateway_requests_per_minute": 2}


def test_a_run_that_falls_back_is_counted_and_shown_on_the_thread_page(server, api_key, project, first, second,
                                                                        admin_client):
    from runs.models import Run

    models(project, first.fake, second.fake)
    first.script(HTTPError(503))
    second.script(Text("The second model answered."))
    before = scrape(server)
    response = requests.post(server.url + "/v1/threads/runs", stream=True, timeout=60, headers={"x-api-key": api_key},
                             json={"userKey": "alice", "message": {"role": "user",
                                                                   "content": [{"type": "text", "text": "hi"}]}})
    events = list(read_events(response))
    after = scrape(server)

    assert events[-1]["type"] == "RUN_FINISHED"
    labels = {"project": "test-project", "from": "openai:m-1", "to": "openai:m-2"}
    assert sample(after, "tambo_model_fallbacks_total", **labels) == \
        sample(before, "tambo_model_fallbacks_total", **labels) + 1
    run_row = Run.objects.get(id=events[0]["runId"])
    page = admin_client.get(admin_url(type(run_row.thread), "change", run_row.thread_id)).content.decode()
    assert "fallbacks openai:m-1 → openai:m-2 (LLM_SERVER_ERROR)" in page
    assert "openai:m-2" in page


def test_a_thread_name_and_suggestions_each_leave_one_usage_row_with_the_vendors_tokens(server, api_key, project,
                                                                                        first):
    from telemetry.models import Usage

    models(project, first.fake)
    thread, messages = conversation(project, ("user", "Which city has the most bridges?"),
                                    ("assistant", "Hamburg has more bridges than Venice."))
    api = Api(server.url, api_key)
    first.script(Text("Bridges of Hamburg", usage=USAGE),
                 Text('{"suggestions": [{"title": "Venice", "detailedSuggestion": "And Venice?"}]}',
                      usage={"prompt_tokens": 51, "completion_tokens": 19, "total_tokens": 70}))
    before = scrape(server)
    assert generate_name(api, thread.id).status_code == 200
    assert generate(api, thread.id, messages[1].id).status_code == 200
    after = scrape(server)

    rows = {row.kind: row for row in Usage.objects.filter(project=project)}
    assert sorted(rows) == ["name", "suggestions"] and Usage.objects.filter(project=project).count() == 2
    name, ideas = rows["name"], rows["suggestions"]
    assert (name.input_tokens, name.output_tokens, name.thread_id, name.model, name.outcome) == \
        (37, 5, thread.id, "m-1", "completed")
    assert (ideas.input_tokens, ideas.output_tokens, ideas.thread_id, ideas.user_key) == (51, 19, thread.id, "alice")
    labels = {"project": "test-project", "model": "m-1"}
    for type_, spent in (("input", 37 + 51), ("output", 5 + 19)):
        assert sample(after, "tambo_tokens_total", type=type_, **labels) == \
            sample(before, "tambo_tokens_total", type=type_, **labels) + spent


def test_a_chat_completion_that_falls_back_is_counted_and_recorded_under_the_model_that_answered(
        server, api_key, project, first, second):
    from telemetry.models import Usage

    models(project, first.fake, second.fake)
    first.script(HTTPError(503))
    second.script(Text("From the second.", usage=USAGE))
    before = scrape(server)
    response = requests.post(server.url + "/api/chat/completions", timeout=60,
                             headers={"Authorization": f"Bearer {api_key}"},
                             json={"model": "m-1", "messages": [{"role": "user", "content": "hi"}]})
    after = scrape(server)

    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "From the second."
    labels = {"project": "test-project", "from": "openai:m-1", "to": "openai:m-2"}
    assert sample(after, "tambo_model_fallbacks_total", **labels) == \
        sample(before, "tambo_model_fallbacks_total", **labels) + 1
    [row] = Usage.objects.filter(project=project, kind="gateway")
    assert (row.model, row.provider, row.input_tokens, row.output_tokens) == ("m-2", "openai", 37, 5)
