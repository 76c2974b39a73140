"""An agent that dies, hangs or answers nonsense ends the run with one clear RUN_ERROR and leaves the
thread free (docs/models.md#agents)."""
from __future__ import annotations

import pytest

from tests.agents.conftest import agent_project
from tests.support.agents import AgentServer
from tests.support.fake_openai import FakeOpenAI, HTTPError, Raw, Stall, Text
from tests.support.fixtures_openai import vendor_view
from tests.support.run_requests import last_run_id, run
from tests.support.sse import iter_events

pytestmark = pytest.mark.django_db(transaction=True)


def run_error(events: list[dict]) -> dict:
    assert events[-1]["type"] == "RUN_ERROR", [e["type"] for e in events]
    return events[-1]


def test_an_agent_that_dies_mid_stream_ends_the_run_and_the_next_one_is_told_it_is_gone(project, api):
    with FakeOpenAI() as fake:
        server = AgentServer("pydantic-ai", fake.base_url)
        try:
            agent_project(project, server.url)
            fake.script(Stall(after=["Half an ans"], seconds=60))
            response = api.post("/v1/threads/runs", {"userKey": "alice", "message": {
                "role": "user", "content": [{"type": "text", "text": "Tell me"}]}}, stream=True)
            thread_id, events = response.headers["X-Thread-Id"], iter_events(response)
            assert next(e for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")["delta"] == "Half an ans"
            server.kill()
            error = run_error(list(events))
            assert error["code"] == "AGENT_ERROR" and error["message"] == \
                "The connection to the agent was lost before it finished."
        finally:
            server.stop()
    thread = api.thread(thread_id)
    assert thread["runStatus"] == "idle"
    kept = [m for m in thread["messages"] if m["role"] == "assistant"]
    assert kept[-1]["content"][0]["text"] == "Half an ans"  # what the user saw is kept
    _, events = run(api, "Still there?", thread_id=thread_id, previousRunId=last_run_id(api, thread_id))
    assert run_error(events)["code"] == "AGENT_UNREACHABLE"


def test_an_agent_that_goes_silent_ends_the_run_at_its_timeout(project, api):
    with FakeOpenAI() as fake:
        server = AgentServer("langgraph", fake.base_url)
        try:
            agent_project(project, server.url, timeoutSeconds=3)
            fake.script(Text("Warm up."), Stall(after=(), seconds=60))
            run(api, "warm up")  # the graph's first run imports and compiles (seconds)
            thread_id, events = run(api, "Hello?")
            assert run_error(events)["code"] == "AGENT_TIMEOUT"
            assert api.thread(thread_id)["runStatus"] == "idle"
        finally:
            server.stop()


@pytest.mark.parametrize("reply, code", [
    (Raw(b"<html>Bad gateway</html>", status=200, content_type="text/html"), "AGENT_ERROR"),
    (Text("an OpenAI stream is no AG-UI stream"), "AGENT_ERROR"),
    (HTTPError(500), "AGENT_ERROR"),
    (HTTPError(401), "AGENT_REJECTED"),
])
def test_an_answer_that_is_not_ag_ui_ends_the_run_with_a_clear_error(project, api, fake_openai, reply, code):
    # The fake OpenAI server stands for a URL that is not an agent at all.
    agent_project(project, fake_openai.base_url + "/chat/completions")
    with vendor_view(fake_openai) as view:
        view.script(reply)
        thread_id, events = run(api, "Hello?")
    error = run_error(events)
    assert error["code"] == code
    assert "html" not in error["message"] and "OpenAI" not in error["message"]
    assert api.thread(thread_id)["runStatus"] == "idle"


def test_nothing_listening_is_agent_unreachable(project, api):
    from tests.support.live import free_port

    agent_project(project, f"http://127.0.0.1:{free_port()}/agent")
    thread_id, events = run(api, "Hello?")
    error = run_error(events)
    assert (error["code"], error["message"]) == ("AGENT_UNREACHABLE", "The agent could not be reached.")
    assert api.thread(thread_id)["runStatus"] == "idle"
