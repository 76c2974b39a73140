"""A server or MCP tool call that times out counts as a step of the run's MAX_MODEL_CALLS_PER_RUN budget
(runs/loop.py, runs/toolbox.py): a model that keeps calling a hanging MCP tool is stopped after half as
many model calls as a run that only calls tools (before, a hanging tool's run went on for all 50).
Counted by the fake vendor's requests, not timed."""
from __future__ import annotations

from typing import Iterator

import pytest
from django.conf import settings

from runs.loop import STEP_LIMIT_CODE
from tests.conftest import Api
from tests.support.fake_openai import FakeOpenAI, ToolCall, ToolCalls
from tests.support.live import LiveServer, openai_live_server
from tests.support.mcp_fixtures import mcp_http_url  # noqa: F401 - fixture
from tests.support.run_requests import run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def hanging_tools(django_db_setup, django_db_blocker) -> Iterator[tuple[FakeOpenAI, LiveServer]]:
    with FakeOpenAI() as fake:
        with openai_live_server("openai-tool-timeouts", fake.base_url, "sk-test", MCP_TIMEOUT="0.3") as server:
            yield fake, server


def test_a_hanging_mcp_tool_uses_up_the_step_budget_twice_as_fast(hanging_tools, api_key, project,
                                                                  mcp_http_url):  # noqa: F811
    from tools.models import McpServer

    fake, server = hanging_tools
    McpServer.objects.create(project=project, name="demo", transport="http", url=mcp_http_url)
    # Arguments that differ each time: identical calls past MAX_IDENTICAL_TOOL_CALLS are refused unrun.
    steps = settings.MAX_MODEL_CALLS_PER_RUN  # the server's default, as the test server runs with it
    fake.script(*[ToolCalls([ToolCall("demo__hang", [f'{{"n": {i}}}'], id=f"call_{i}")]) for i in range(steps + 5)])

    _, events = run(Api(server.url, api_key), "keep calling the hanging tool")

    assert (events[-1]["type"], events[-1]["code"]) == ("RUN_ERROR", STEP_LIMIT_CODE)
    # Each step: one model call and one timed-out call, each counted against the limit.
    assert len(fake.requests) == steps // 2
