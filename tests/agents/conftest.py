"""Real agents on loopback (tests/support/agent_apps), each with its model at a fake OpenAI server, and
a project whose model is the agent (docs/models.md#agents)."""
from __future__ import annotations

from typing import Iterator

import pytest

from tests.support.agents import AgentServer
from tests.support.fake_openai import FakeOpenAI
from tests.support.fixtures_openai import vendor_view

AGENTS = ["langgraph", "pydantic-ai"]


class Agent:
    def __init__(self, kind: str, fake: FakeOpenAI, server: AgentServer):
        self.kind, self.fake, self.server = kind, fake, server


# Shared by every module that uses it (session scope, per worker; pytest groups the tests by agent):
# each agent process imports its framework once, not once per module. Each test has its own view of
# the fake model and its own project.
@pytest.fixture(scope="session", params=AGENTS)
def agent(request) -> Iterator[Agent]:
    fake = FakeOpenAI().start()
    server = AgentServer(request.param, fake.base_url)
    try:
        yield Agent(request.param, fake, server)
    finally:
        server.stop()
        fake.stop()


def agent_project(project, url: str, **spec) -> None:
    """Makes `project` an agent's through the project file, as an operator would."""
    import yaml

    from projects.project_file import project_file_apply, project_file_parse

    model = {"provider": "agent", "url": url, "name": "weather", **spec}
    project_file_apply(project_file_parse(yaml.safe_dump({"projects": [{"name": project.name, "models": [model]}]})))
    project.refresh_from_db()


@pytest.fixture
def on_agent(agent: Agent, project, api) -> Iterator[Agent]:
    """The test's project answered by the module's agent; `fake` is this test's view of its model."""
    agent_project(project, agent.server.url, protocol=agent.kind)
    with vendor_view(agent.fake) as view:
        yield Agent(agent.kind, view, agent.server)
