"""End to end: the `clientsdk.message` engine with its default provider against the live gateway."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from clientsdk.message import ChatCompletionsHTTPError, ChatCompletionsProvider, MessageEngine, tool_plugin
from tests.gateway.wire import weather_tool

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "gateway" / "README.md"


@pytest.mark.both_dbs
def test_the_engine_runs_a_local_tool_round_through_the_gateway(live_server_url, api_key):
    calls = []

    def call_tool(tool_call):
        calls.append((tool_call["function"]["name"], json.loads(tool_call["function"]["arguments"])))
        return "light rain, 12 °C"

    engine = MessageEngine(ChatCompletionsProvider(live_server_url, api_key, model="offline", timeout=30),
                           plugins=[tool_plugin(get_tools=lambda: [weather_tool()], call_tool=call_tool)])

    state = engine.send_message('How is it outside? Use get_weather {"city": "Bergen"}')

    assert state == "completed"
    assert calls == [("get_weather", {"city": "Bergen"})]
    user, call, result, reply = engine.messages
    assert user["role"] == "user"
    assert call["role"] == "assistant"
    [tool_call] = call["tool_calls"]
    assert tool_call["function"] == {"name": "get_weather", "arguments": '{"city": "Bergen"}'}
    assert call["state"]["toolCall"][tool_call["id"]]["status"] == "success"
    assert (result["role"], result["tool_call_id"], result["content"]) == ("tool", tool_call["id"], "light rain, 12 °C")
    assert reply["role"] == "assistant"
    assert reply["content"] == "Tool get_weather returned: light rain, 12 °C"
    assert not reply.get("loading")


def test_the_engine_keeps_the_conversation_across_turns(live_server_url, api_key):
    engine = MessageEngine(ChatCompletionsProvider(live_server_url, api_key, timeout=30))

    engine.send_message("first")
    state = engine.send_message("second")

    assert state == "completed"
    assert [m["role"] for m in engine.messages] == ["user", "assistant", "user", "assistant"]
    assert engine.messages[-1]["content"].startswith("(offline model) You said: second")


def test_the_engine_reports_a_gateway_error_as_an_error(live_server_url):
    engine = MessageEngine(ChatCompletionsProvider(live_server_url, "tk_wrong", timeout=30))

    with pytest.raises(ChatCompletionsHTTPError) as caught:
        engine.send_message("hello")

    assert engine.request_state == "error"
    assert caught.value.status_code == 401
    assert caught.value.body["error"]["code"] == "invalid_api_key"


def test_the_readme_example_runs(live_server_url, api_key):
    [example] = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)

    done = subprocess.run([sys.executable, "-c", example], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "TAMBO_BASE_URL": live_server_url, "TAMBO_API_KEY": api_key})

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "user: What time is it? Please use local_time."
    assert lines[1].startswith("assistant: [{") and "local_time" in lines[1]
    assert re.fullmatch(r"tool: \d\d:\d\d UTC", lines[2])
    assert re.fullmatch(r"assistant: Tool local_time returned: \d\d:\d\d UTC", lines[3])
