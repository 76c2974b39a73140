"""Both MCP protocol eras (docs/tools.md#tool-lists-and-protocol-eras), against the real era test server
(tests/support/mcp_era_server.py) over streamable HTTP on loopback: a 2026-07-28 (stateless) one and a
session-era one, each appending the listings and calls it receives to a log the tests read.
"""
from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.mcp_fixtures import running_era_mcp_server
from tests.support.run_requests import run, stored_results, text_of, tool_results, user_message
from tests.support.sse import read_events, types
from tools.mcp_client import McpServerConfig
from tools.mcp_tool_cache import MAX_SERVER_TTL, MIN_SERVER_TTL, McpToolCache

DAY_MS = 24 * 3600 * 1000


@pytest.fixture(scope="module")
def logs() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder)


def requests_in(log: Path, method: str) -> list[dict]:
    if not log.exists():
        return []
    return [entry for line in log.read_text().splitlines() if (entry := json.loads(line))["method"] == method]


def config_of(url: str, name: str = "era") -> McpServerConfig:
    return McpServerConfig(name=name, transport="http", url=url)


# --- ttlMs and the tool-list cache ----------------------------------------------------------------------


def listings_at(url: str, log: Path, offsets: list[float]) -> list[int]:
    """Asks a cache (the production lister: the server's kept session) for the tools at each of `offsets`
    seconds on its clock; returns how many listings the server had received after each."""
    from tools.mcp_sessions import McpSessions

    now = [1000.0]
    counts = []

    async def main():
        kept = McpSessions(idle_timeout=60)
        cache = McpToolCache(ttl=30.0, timeout=30, clock=lambda: now[0], lister=kept.list_tools)
        try:
            for offset in offsets:
                now[0] = 1000.0 + offset
                tools = await cache.get(config_of(url))
                assert tools is not None and {tool.name for tool in tools} >= {"era"}
                counts.append(len(requests_in(log, "tools/list")))
        finally:
            await kept.aclose()

    asyncio.run(main())
    return counts


@pytest.mark.parametrize(("ttl_ms", "fresh_for"), [
    (12000, 12.0),  # the server's own ttl
    (0, MIN_SERVER_TTL),  # "immediately stale" (the package's default): kept for the floor
    (10 * DAY_MS, MAX_SERVER_TTL),  # more than the ceiling: kept for the ceiling
])
def test_a_2026_server_s_ttl_ms_decides_when_its_tool_list_is_fetched_again(logs, ttl_ms, fresh_for):
    log = logs / f"modern-{ttl_ms}.jsonl"
    with running_era_mcp_server(ttl_ms=ttl_ms, call_log=str(log)) as url:
        counts = listings_at(url, log, [0.0, fresh_for - 0.1, fresh_for + 0.1, 2 * fresh_for])
    assert counts == [1, 1, 2, 2]
    assert all(entry["era"] == "2026-07-28" for entry in requests_in(log, "tools/list"))


def test_a_session_era_server_s_list_is_kept_for_the_configured_ttl(logs):
    # The server is told to send a ttl of 12 s; on a session-era connection the hint does not count.
    log = logs / "legacy.jsonl"
    with running_era_mcp_server(legacy=True, ttl_ms=12000, call_log=str(log)) as url:
        counts = listings_at(url, log, [0.0, 12.1, 29.9, 30.1])
    assert counts == [1, 1, 1, 2]
    assert all(entry["era"] != "2026-07-28" for entry in requests_in(log, "tools/list"))


# --- our trace context in `_meta` -----------------------------------------------------------------------


def add_server(project, url: str, name: str):
    from tools.models import McpServer

    return McpServer.objects.create(project=project, name=name, transport="http", url=url)


@pytest.fixture
def traced_api(transactional_db, api_key):
    """A live server with tracing on, exporting to a receiver in the test (as tests/telemetry/test_traces.py)."""
    from tests.conftest import Api
    from tests.support.live import LiveServer
    from tests.telemetry.test_traces import Receiver

    receiver = Receiver()
    server = LiveServer("traced-mcp", {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "50",
                                       "OTEL_SERVICE_NAME": "tambo-test"})
    try:
        yield Api(server.url, api_key), receiver
    finally:
        server.stop()
        receiver.close()


TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_SPAN = "00f067aa0ba902b7"
TRACESTATE = "tambo=t61rcWkgMzE"


def test_with_tracing_on_each_tool_call_carries_the_run_s_trace_context_in_its_meta(traced_api, project, logs):
    api, receiver = traced_api
    modern_log, legacy_log = logs / "traced-modern.jsonl", logs / "traced-legacy.jsonl"
    with running_era_mcp_server(call_log=str(modern_log)) as modern, \
            running_era_mcp_server(legacy=True, call_log=str(legacy_log)) as legacy:
        add_server(project, modern, "modern")
        add_server(project, legacy, "legacy")
        # A caller's trace, with a vendor's tracestate: the run continues it, and so do its MCP calls.
        response = api.post("/v1/threads/runs", {"userKey": "alice", "message": user_message(
            "modern__era then legacy__era {}")}, stream=True,
            headers={"traceparent": f"00-{TRACE_ID}-{PARENT_SPAN}-01", "tracestate": TRACESTATE})
        events = read_events(response)
    assert types(events)[-1] == "RUN_FINISHED"
    assert text_of(events).splitlines() == ["Tool modern__era returned: 2026-07-28",
                                            "Tool legacy__era returned: 2025-11-25"]
    [modern_call], [legacy_call] = requests_in(modern_log, "tools/call"), requests_in(legacy_log, "tools/call")
    parents = {}
    for call in (modern_call, legacy_call):
        version, trace_id, parent_id, flags = call["meta"]["traceparent"].split("-")
        assert (version, trace_id, flags) == ("00", TRACE_ID, "01")
        assert call["meta"]["tracestate"] == TRACESTATE
        parents[parent_id] = trace_id

    def exported(spans):
        ids = {span.span_id.hex() for span in spans}
        return any(span.name == "invoke_agent" for span in spans) and set(parents) <= ids

    receiver.wait_for(exported)
    [agent] = [span for span in receiver.spans if span.name == "invoke_agent"]
    for parent_id, trace_id in parents.items():
        assert trace_id == agent.trace_id.hex()
        # The traceparent names the package's client span of the call, itself under the run's span.
        [sender] = [span for span in receiver.spans if span.span_id.hex() == parent_id]
        assert sender.name.startswith("MCP send tools/call") and sender.parent_span_id == agent.span_id


def test_with_tracing_off_a_tool_call_carries_no_trace_context_and_works(api, project, logs):
    log = logs / "untraced.jsonl"
    with running_era_mcp_server(call_log=str(log)) as url:
        add_server(project, url, "demo")
        _, events = run(api, "demo__era {}")
    assert text_of(events) == "Tool demo__era returned: 2026-07-28"
    [call] = requests_in(log, "tools/call")
    assert not {"traceparent", "tracestate"} & set(call["meta"] or {})


# --- structuredContent of any JSON ----------------------------------------------------------------------


@pytest.mark.parametrize(("value", "text"), [
    ([1, 2, 3], "[1, 2, 3]"), ("tosca", '"tosca"'), (42, "42"), (0, "0"), (False, "false"), ({"seats": 2}, '{"seats": 2}'),
])
def test_structured_content_alone_of_any_json_kind_is_shown_as_its_json(value, text):
    from mcp.types import CallToolResult

    from tools.mcp_client import content_blocks

    assert content_blocks(CallToolResult(content=[], structured_content=value)) == [{"type": "text", "text": text}]


def test_structured_content_of_any_json_kind_reaches_the_model_and_is_stored(api, project, logs):
    with running_era_mcp_server() as url:
        add_server(project, url, "demo")
        thread_id, events = run(api, "demo__numbers, demo__word, demo__count and demo__record {}")
    assert types(events)[-1] == "RUN_FINISHED"
    texts = ["[1, 2, 3]", '"tosca"', "42", '{"seats": 2}']
    assert [result["content"] for result in tool_results(events)] == texts
    assert [stored["content"] for stored in stored_results(api, thread_id)] == [
        [{"type": "text", "text": text}] for text in texts]
    assert text_of(events).splitlines() == [f"Tool demo__{name} returned: {text}" for name, text in zip(
        ("numbers", "word", "count", "record"), texts)]


# --- both eras in one project ---------------------------------------------------------------------------


def test_a_2026_server_and_a_session_era_server_serve_one_project_each_in_its_own_era(api, project, logs):
    modern_log, legacy_log = logs / "both-modern.jsonl", logs / "both-legacy.jsonl"
    with running_era_mcp_server(call_log=str(modern_log)) as modern, \
            running_era_mcp_server(legacy=True, call_log=str(legacy_log)) as legacy:
        add_server(project, modern, "modern")
        add_server(project, legacy, "legacy")
        thread_id, events = run(api, "legacy__era then modern__era {}")
    assert types(events)[-1] == "RUN_FINISHED"
    # Both results reach the model, each naming the revision its call was made in.
    assert text_of(events).splitlines() == ["Tool legacy__era returned: 2025-11-25",
                                            "Tool modern__era returned: 2026-07-28"]
    assert [stored["content"] for stored in stored_results(api, thread_id)] == [
        [{"type": "text", "text": "2025-11-25"}], [{"type": "text", "text": "2026-07-28"}]]
    # Negotiated per server: the 2026-07-28 one was listed and called statelessly, the other on a session
    # (every request after `initialize` carries its Mcp-Session-Id).
    modern_requests = requests_in(modern_log, "tools/list") + requests_in(modern_log, "tools/call")
    legacy_requests = requests_in(legacy_log, "tools/list") + requests_in(legacy_log, "tools/call")
    for requests in (modern_requests, legacy_requests):
        assert [r["method"] for r in requests].count("tools/call") == 1 and requests[0]["method"] == "tools/list"
    assert {(r["era"], r["session"]) for r in modern_requests} == {("2026-07-28", False)}
    assert {(r["era"], r["session"]) for r in legacy_requests} == {("2025-11-25", True)}
