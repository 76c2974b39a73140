"""MAX_TOOL_CALLS_PER_TURN bounds every project: a project keeping the default per-turn limit (100)
on a server started with MAX_TOOL_CALLS_PER_TURN=2 gets 2 (it was ignored unless the project's own
value was 0)."""
from __future__ import annotations

from typing import Iterator

import pytest

from tests.models.conftest import OPENAI_KEY, apply_file, openai_model
from tests.runs.conftest import WEATHER_TOOL, Runs, event_of
from tests.support.fake_openai import ToolCall, ToolCalls
from tests.support.live import LiveServer

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def limited_server(openai_vendor, django_db_setup, django_db_blocker) -> Iterator[LiveServer]:
    server = LiveServer("tool-limit", {"FAKE_OPENAI_KEY": OPENAI_KEY, "MAX_TOOL_CALLS_PER_TURN": "2"})
    yield server
    server.stop()


def test_the_servers_limit_applies_to_a_project_with_the_default_limit(tmp_path, limited_server, oai):
    from projects.models import ApiKey, Project
    from tests.conftest import Api, wait_for_idle_threads

    apply_file(tmp_path, f"projects:\n  - name: limited\n    models: [{openai_model(oai.fake)}]\n")
    project = Project.objects.get(name="limited")
    assert project.max_tool_calls_per_turn == 100
    _, raw = ApiKey.generate(project, "tests")
    oai.script(ToolCalls([ToolCall("get_weather", f'{{"city": "{city}"}}', id=f"call_{n}")
                          for n, city in enumerate(["Oslo", "Lyon", "Rome"])]))
    _, events = Runs(Api(limited_server.url, raw)).run_new("three cities", tools=[WEATHER_TOOL])
    pending = event_of(events, "CUSTOM", "tambo.run.awaiting_input")["value"]["pendingToolCalls"]
    assert [call["toolCallId"] for call in pending] == ["call_0", "call_1"]
    refused = event_of(events, "TOOL_CALL_RESULT")
    assert refused["toolCallId"] == "call_2" and "at most 2 tool calls" in refused["content"]
    wait_for_idle_threads()
