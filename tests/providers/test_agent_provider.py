"""The `agent` provider alone (providers/agent_provider.py): what AG-UI events become, and that closing
a step drops the request to the agent. No database; a tiny AG-UI server on loopback."""
from __future__ import annotations

import asyncio
import json

import pytest
from ag_ui.core import (RunErrorEvent, RunFinishedEvent, StateDeltaEvent, StateSnapshotEvent,
                        TextMessageContentEvent, TextMessageStartEvent, TokenUsage, ToolCallArgsEvent, ToolCallResultEvent, ToolCallStartEvent)

from providers.agent_provider import AgentFold, AgentProvider, agent_input, instructions_inline
from providers.base import (ModelError, ModelRequest, ModelTool, RunRef, StepEnd, TextDelta,
                            ToolCallDelta)


def test_the_apps_tool_calls_are_deltas_and_the_agents_own_are_not():
    fold = AgentFold(["get_location"])
    deltas = []
    for event in [
        ToolCallStartEvent(tool_call_id="own", tool_call_name="get_weather"),
        ToolCallArgsEvent(tool_call_id="own", delta='{"city": "Paris"}'),
        ToolCallResultEvent(message_id="m", tool_call_id="own", content="Sunny"),
        TextMessageStartEvent(message_id="a", role="assistant"),
        TextMessageContentEvent(message_id="a", delta="Sunny. "),
        TextMessageContentEvent(message_id="b", delta="Where are you?"),
        ToolCallStartEvent(tool_call_id="app", tool_call_name="get_location"),
        ToolCallArgsEvent(tool_call_id="app", delta="{}"),
        RunFinishedEvent(thread_id="t", run_id="r", usage=[TokenUsage(input_tokens=7, output_tokens=3)]),
    ]:
        deltas += fold.feed(event)
    assert deltas == [TextDelta("Sunny. "), TextDelta("\n\nWhere are you?"),
                      ToolCallDelta(index=0, id="app", name="get_location", arguments=""),
                      ToolCallDelta(index=0, id=None, name=None, arguments="{}")]
    assert fold.end() == StepEnd("tool_calls", {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10})


def test_the_agents_run_error_and_an_unfinished_run_are_agent_errors():
    with pytest.raises(ModelError) as caught:
        AgentFold([]).feed(RunErrorEvent(message="secret internals", code="BOOM"))
    assert caught.value.code == "AGENT_ERROR" and "secret" not in caught.value.message
    unfinished = AgentFold([])
    unfinished.feed(TextMessageContentEvent(message_id="a", delta="Half"))
    with pytest.raises(ModelError) as caught:
        unfinished.end()
    assert caught.value.code == "AGENT_ERROR"


def test_the_agents_state_events_change_the_state_it_was_sent_and_end_the_step_with_it():
    fold = AgentFold([], state={"units": "metric", "city": "Lyon"})
    for event in [
        StateDeltaEvent(delta=[{"op": "replace", "path": "/city", "value": "Paris"}]),
        # ag-ui-langgraph's snapshots carry the input's own fields too: not state, never kept.
        StateSnapshotEvent(snapshot={"city": "Paris", "visits": [1], "messages": [{"type": "human"}], "tools": []}),
        StateDeltaEvent(delta=[{"op": "add", "path": "/visits/-", "value": 2},
                               {"op": "add", "path": "/messages/-", "value": {"type": "ai"}}]),
        RunFinishedEvent(thread_id="t", run_id="r"),
    ]:
        assert fold.feed(event) == []
    end = fold.end()
    assert (end.state, end.state_reported) == ({"city": "Paris", "visits": [1, 2]}, True)

    quiet = AgentFold([], state={"units": "metric"})
    quiet.feed(RunFinishedEvent(thread_id="t", run_id="r"))
    assert quiet.end().state_reported is False  # nothing reported: the thread's state stays as it is

    wrong = AgentFold([], state={})
    with pytest.raises(ModelError) as caught:
        wrong.feed(StateDeltaEvent(delta=[{"op": "replace", "path": "/missing", "value": 1}]))
    assert (caught.value.code, caught.value.message) == (
        "AGENT_ERROR", "The agent sent a state change that does not apply to its state.")


def test_a_side_tasks_instructions_start_its_user_turn_which_agents_do_not_strip():
    task = [{"role": "system", "content": "You name conversations."},
            {"role": "user", "content": "The conversation:\n\nUser: hello"}]
    assert instructions_inline(task) == [
        {"role": "user", "content": "You name conversations.\n\nThe conversation:\n\nUser: hello"}]
    plain = [{"role": "user", "content": "hello"}]
    assert instructions_inline(plain) == plain


def test_the_input_carries_the_history_the_tools_and_the_state():
    request = ModelRequest(messages=[
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Where?"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_location", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Lyon"},
    ], tools=[ModelTool("get_location", "where", {"type": "object"})],
        run=RunRef(thread_id="thr_1", run_id="run_1", state={"step": 2}))
    first, second = agent_input(request), agent_input(request)
    assert [m.role for m in first.messages] == ["system", "user", "assistant", "tool"]
    assert [m.id for m in first.messages] == [m.id for m in second.messages]  # stable ids
    assert first.thread_id.startswith("thr_1.") and first.thread_id != second.thread_id
    assert first.parent_run_id == "run_1" and first.state == {"step": 2}
    assert [t.name for t in first.tools] == ["get_location"]
    assert first.messages[2].tool_calls[0].id == "c1" and first.messages[3].tool_call_id == "c1"


class SlowAgent:
    """An AG-UI server that streams text forever and notes when its client hangs up."""

    def __init__(self):
        self.hung_up = asyncio.Event()
        self.headers: list[str] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.headers = head.decode().lower().split("\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
        event = json.dumps({"type": "TEXT_MESSAGE_CONTENT", "messageId": "a", "delta": "."}).encode()
        try:
            while True:
                writer.write(b"data: " + event + b"\n\n")
                await writer.drain()
                try:
                    if await asyncio.wait_for(reader.read(1), 0.05) == b"":
                        break
                except asyncio.TimeoutError:
                    continue
        except (ConnectionError, OSError):
            pass
        self.hung_up.set()
        writer.close()


def test_cancelling_a_step_drops_the_request_and_the_headers_are_sent():
    async def main():
        agent = SlowAgent()
        server = await asyncio.start_server(agent.handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        provider = AgentProvider(url=f"http://127.0.0.1:{port}/agent", headers={"Authorization": "Bearer k"})
        seen = []

        async def consume():
            async for delta in provider.stream(ModelRequest(messages=[{"role": "user", "content": "hi"}])):
                seen.append(delta)

        task = asyncio.ensure_future(consume())
        while len(seen) < 3:
            await asyncio.sleep(0.01)
        task.cancel()  # as a run's cancel stops its model call (runs/control.py)
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(agent.hung_up.wait(), 10)
        assert "authorization: bearer k" in agent.headers
        await provider.aclose()
        server.close()

    asyncio.run(main())
