"""A project backed by an agent keeps the project's rules (docs/models.md#agents): its origins, run rates
and token budgets refuse a run before the agent is called (counted at the agent's side), the budgets are
charged the agent's reported usage or, where it reports none, the estimate; the run leaves its usage
row, and its trace has the `invoke_agent` spans of the project's run and of the call to the agent."""
from __future__ import annotations

from typing import Iterator

import pytest
import yaml

from tests.agents.conftest import Agent
from tests.conftest import Api
from tests.projects.test_limits import fresh_minute
from tests.support.fake_openai import Text
from tests.support.live import LiveServer
from tests.support.problems import assert_problem
from tests.support.run_requests import last_run_id, run, text_of, user_message
from tests.support.sse import read_events, types
from tests.telemetry.test_traces import Receiver, _attrs

pytestmark = pytest.mark.django_db(transaction=True)

APP = "https://shop.example.com"


def project_rules(project, **keys) -> None:
    """Sets project-file keys (`allowedOrigins`, `limits`) as an operator would; the agent stays its model
    (a key the file leaves out keeps its value)."""
    from projects.project_file import project_file_apply, project_file_parse

    project_file_apply(project_file_parse(yaml.safe_dump({"projects": [{"name": project.name, **keys}]})))
    project.refresh_from_db()


def usage(total: int) -> dict[str, int]:
    """What the agent's model reports (the fake's usage chunk); LangGraph passes it on in RUN_FINISHED."""
    return {"prompt_tokens": total - 10, "completion_tokens": 10, "total_tokens": total}


def agui_input(text: str) -> dict:
    return {"threadId": "client-thread-rules", "runId": "client-run-rules", "state": {}, "context": [], "tools": [],
            "messages": [{"id": "m1", "role": "user", "content": text}], "forwardedProps": {"userKey": "alice"}}


def refused_everywhere(api, thread_id: str, **headers: str) -> list:
    """A run asked for on each run route (/v1 on a new thread and on `thread_id`, AG-UI); the answers."""
    body = {"userKey": "alice", "message": user_message("Once more?")}
    return [api.post("/v1/threads/runs", body, headers=headers),
            api.post(f"/v1/threads/{thread_id}/runs", {**body, "previousRunId": last_run_id(api, thread_id)},
                     headers=headers),
            api.post("/v1/agui", agui_input("Once more?"), headers=headers)]


def started(agent: Agent) -> int:
    """The requests the agent has had (counted at its side: tests/support/agent_apps/counting.py)."""
    return agent.server.counts()["started"]


def project_tokens(project) -> int:
    from projects.limit_models import LimitCounter

    return LimitCounter.objects.get(project=project, kind="tokens", user_key="").count


def run_usage(run_id: str) -> dict:
    from runs.models import Run

    return Run.objects.get(id=run_id).usage


# First: each agent's first run of the module warms it up (the rate test below counts in one minute).
def test_an_agent_run_records_its_usage_row(on_agent: Agent, project, api):
    from telemetry.models import Usage

    on_agent.fake.script(Text("Sunny.", usage=usage(100)))
    thread_id, events = run(api, "How is the weather?")
    run_id = events[0]["runId"]

    row = Usage.objects.get(run_id=run_id)
    assert (row.kind, row.outcome, row.project_id, row.thread_id) == ("run", "completed", project.id, thread_id)
    assert (row.provider, row.model) == ("agent", "weather")
    assert row.total_tokens == run_usage(run_id)["total_tokens"] > 0


def test_a_run_from_an_origin_the_project_does_not_list_never_reaches_the_agent(on_agent: Agent, project, api):
    on_agent.fake.script(Text("Before the rule."))
    thread_id, _ = run(api, "A thread to run on")
    project_rules(project, allowedOrigins=[APP])
    before = started(on_agent)

    for response in refused_everywhere(api, thread_id, Origin="https://evil.example.com"):
        assert_problem(response, 403, "ORIGIN_NOT_ALLOWED")
    assert started(on_agent) == before

    # The app's own origin is served, and that run is counted at the agent.
    on_agent.fake.script(Text("From the app."))
    response = api.post("/v1/threads/runs", {"userKey": "alice", "message": user_message("Hello?")}, stream=True,
                        headers={"Origin": APP})
    assert response.status_code == 200, response.text
    assert text_of(read_events(response)) == "From the app."
    assert started(on_agent) == before + 1


def test_a_run_past_the_run_rate_is_refused_before_the_agent_is_called(on_agent: Agent, project, api):
    project_rules(project, limits={"runsPerMinutePerUser": 1})
    fresh_minute(room=20)
    before = started(on_agent)
    on_agent.fake.script(Text("The one run of this minute."))

    thread_id, events = run(api, "First")
    assert text_of(events) == "The one run of this minute."
    for response in refused_everywhere(api, thread_id):
        assert_problem(response, 429, "RATE_LIMITED")
        assert 1 <= int(response.headers["Retry-After"]) <= 60

    assert started(on_agent) == before + 1


@pytest.mark.parametrize("agent", ["langgraph"], indirect=True)  # ag-ui-langgraph reports its model's usage
def test_the_budget_is_charged_the_usage_the_agent_reports(on_agent: Agent, project, api):
    project_rules(project, limits={"tokensPerDay": 150})
    before = started(on_agent)
    on_agent.fake.script(Text("One.", usage=usage(100)), Text("Two.", usage=usage(100)))

    thread_id, first = run(api, "First")
    assert run_usage(first[0]["runId"]) == usage(100)  # the agent's own count, not an estimate
    assert project_tokens(project) == 100
    _, second = run(api, "Second")  # 100 of 150 spent: let in, and it spends 100 more
    assert text_of(second) == "Two." and project_tokens(project) == 200

    for response in refused_everywhere(api, thread_id):
        assert_problem(response, 429, "BUDGET_EXCEEDED")
    assert started(on_agent) == before + 2
    assert project_tokens(project) == 200  # a refused run keeps nothing reserved


def test_a_run_of_an_agent_that_reports_no_usage_is_charged_the_estimate(on_agent: Agent, project, api):
    from providers.estimate import chars_tokens

    project_rules(project, limits={"tokensPerDay": 1})
    before = started(on_agent)
    answer = "It will be sunny all week long in Lyon, France."
    # No usage from the agent's model: ag-ui-langgraph has none to report, and PydanticAI's AG-UI
    # adapter reports none by default.
    on_agent.fake.script(Text(answer, reports_usage=False))

    thread_id, events = run(api, "The week's weather?")
    assert text_of(events) == answer
    charged = run_usage(events[0]["runId"])
    assert charged["completion_tokens"] == chars_tokens(len(answer)) and charged["prompt_tokens"] > 0
    assert project_tokens(project) == charged["total_tokens"]

    for response in refused_everywhere(api, thread_id):
        assert_problem(response, 429, "BUDGET_EXCEEDED")
    assert started(on_agent) == before + 1


@pytest.fixture
def traced(transactional_db) -> Iterator[tuple[LiveServer, Receiver]]:
    """A server exporting its spans to an OTLP receiver in the test (tests/telemetry/test_traces.py)."""
    receiver = Receiver()
    server = LiveServer("traced-agent", {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "50"})
    try:
        yield server, receiver
    finally:
        server.stop()
        receiver.close()


@pytest.mark.parametrize("agent", ["langgraph"], indirect=True)  # its reported usage is on the call's span
def test_the_run_and_the_call_to_the_agent_are_invoke_agent_spans_of_the_project(on_agent: Agent, traced,
                                                                                   project, api_key):
    server, receiver = traced
    on_agent.fake.script(Text("Traced.", usage=usage(100)))
    thread_id, events = run(Api(server.url, api_key), "Trace this")
    assert types(events)[-1] == "RUN_FINISHED"

    receiver.wait_for(lambda spans: sum(s.name.startswith("invoke_agent") for s in spans) >= 2)
    (run_span,) = [s for s in receiver.spans if s.name == "invoke_agent"]
    (call_span,) = [s for s in receiver.spans if s.name.startswith("invoke_agent ")]
    assert call_span.name == "invoke_agent weather"  # was `invoke_agent offline`, the server's default model
    assert call_span.parent_span_id == run_span.span_id and call_span.trace_id == run_span.trace_id
    ran = _attrs(run_span)
    assert (ran["tambo.project.id"], ran["tambo.run.id"], ran["gen_ai.conversation.id"]) == \
        (project.id, events[0]["runId"], thread_id)
    assert (ran["gen_ai.provider.name"], ran["gen_ai.request.model"]) == ("agent", "weather")
    assert (ran["gen_ai.usage.input_tokens"], ran["gen_ai.usage.output_tokens"]) == (90, 10)
    called = _attrs(call_span)
    assert (called["gen_ai.operation.name"], called["gen_ai.agent.name"], called["gen_ai.provider.name"]) == \
        ("invoke_agent", "weather", "agent")
    assert (called["gen_ai.usage.input_tokens"], called["gen_ai.usage.output_tokens"]) == (90, 10)
    # The call's span (around the agent's stream, runs/loop.py) lies within the run's.
    assert run_span.start_time_unix_nano <= call_span.start_time_unix_nano <= call_span.end_time_unix_nano \
        <= run_span.end_time_unix_nano
