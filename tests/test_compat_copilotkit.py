"""CopilotKit itself drives POST /v1/agui: `@copilotkit/runtime` 1.75.0 (which pins `@ag-ui/client`
0.0.59) with an `HttpAgent` pointing at this server, and a headless `@copilotkit/core` client whose
frontend tool runs and whose result reaches the model's next call (`tests/compat/copilotkit/run.mjs`,
installed by `npm ci` there; bin/test does it)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import node
from threads.models import Thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.node]

COPILOTKIT_DIR = Path(__file__).resolve().parent / "compat" / "copilotkit"


def test_a_copilotkit_frontend_tool_runs_and_its_result_reaches_the_model(live_server_url, api_key, api):
    done = node.run_node(COPILOTKIT_DIR, "@copilotkit/runtime", ["run.mjs", "frontend_tool"], live_server_url, api_key,
                         {"COPILOTKIT_TELEMETRY_DISABLED": "true"})
    result = node.scenario_result(done, "frontend_tool")

    assert result["finalText"] == 'Tool lookup_weather returned: {"city":"Paris","forecast":"sunny"}'
    thread = api.thread(Thread.objects.get(external_id=result["threadId"]).id)
    blocks = [b for m in thread["messages"] for b in m["content"]]
    assert [b["type"] for b in blocks] == ["text", "tool_use", "tool_result", "text"]
    assert json.loads(blocks[2]["content"][0]["text"]) == {"city": "Paris", "forecast": "sunny"}
