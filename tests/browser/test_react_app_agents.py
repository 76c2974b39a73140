"""The React app of test_react_app.py, unchanged, on a project whose model is an external agent
(docs/models.md#agents): a LangGraph graph served by ag-ui-langgraph and a PydanticAI agent's AG-UI app
(tests/support/agent_apps), each with its own model at the OpenAI fake.

The agent's model answers every request by the offline model's rules (tests/support/rule_replies.py
`openai_reply`), so the app has the same conversation as on the offline model: a text reply, its client
tool run in the browser with the result going back to the agent, its component rendered with streamed
props, a follow-up, the thread's name and suggestions (asked of the agent too), a reload that reopens the
thread. Every call the app's SDK makes must answer 2xx and the page must log no error.
"""
from __future__ import annotations

from typing import Iterator

import pytest

from tests.agents.conftest import Agent, agent, agent_project  # noqa: F401 - fixture
from tests.browser.test_react_app import (app_bundle, app_origin, open_app,  # noqa: F401 - fixtures
                                          react_page, run_everything)
from tests.conftest import Api
from tests.support.rule_replies import openai_reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


@pytest.fixture
def agent_project_by_rules(agent: Agent, project) -> Iterator[tuple[Agent, int]]:
    """The test's project answered by the module's agent, whose model answers by the offline rules;
    yields the agent and how many requests its model had before the test."""
    agent_project(project, agent.server.url, protocol=agent.kind)
    agent.fake.responder = openai_reply
    try:
        yield agent, len(agent.fake.requests)
    finally:
        agent.fake.responder = None


def test_a_react_app_on_an_agent_project_chats_runs_its_client_tool_and_renders_its_component(
        react_page, app_origin, live_server_url, api_key, agent_project_by_rules):
    page, recorder = react_page
    on_agent, seen = agent_project_by_rules
    user = f"react-{on_agent.kind}"
    api = Api(live_server_url, api_key, user_key=user)
    open_app(page, app_origin, live_server_url, api_key, userKey=user)

    run_everything(page, recorder, api)

    # Every answer was the agent's: its model was asked, with the app's tool and component offered
    # beside the agent's own tool, and its calls of them came back to the agent with their results.
    from runs.models import Run

    runs = Run.objects.filter(thread__user_key=user)
    assert runs.count() >= 5 and set(runs.values_list("answered_model", flat=True)) == {"agent:weather"}
    asked = [r.body for r in on_agent.fake.requests[seen:]]
    offered = {t["function"]["name"] for body in asked for t in body.get("tools") or ()}
    assert {"lookup_population", "show_component_WeatherCard", "get_weather"} <= offered, offered
    messages = [m for body in asked for m in body["messages"]]
    called = {c["id"]: c["function"]["name"] for m in messages if m["role"] == "assistant"
              for c in m.get("tool_calls") or ()}
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    population = [results[i] for i, name in called.items() if name == "lookup_population" and i in results]
    assert population and "522250" in str(population), population
    assert any(name == "show_component_WeatherCard" and i in results for i, name in called.items()), called
