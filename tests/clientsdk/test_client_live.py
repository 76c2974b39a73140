"""The client and its tool loop against the real server (offline model), through HTTP only.

Offline model rules used here: it calls every offered tool whose exact name appears in the last
user text (arguments: the first JSON object in that text); after tool results it answers
"Tool <name> returned: <text>"; "!fail" gives RUN_ERROR LLM_SERVER_ERROR; "!slow" streams slowly.
To make the model ask for another round, a `before_run` hook adds a text block naming a tool to
the continuation message (a continuation may carry text next to its tool results).
"""
from __future__ import annotations

import threading
import time

import pytest
from ag_ui.core import EventType

from clientsdk import Client, MaxStepsExceeded, RunError, ToolResult

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client(live_server_url, api_key):
    with Client(live_server_url, api_key, "alice", timeout=30) as c:
        yield c


def name_next_tool(client: Client, texts: list[str]) -> list[dict]:
    """Register a before_run hook that appends texts[i] to the i-th continuation; return the bodies sent."""
    bodies: list[dict] = []

    def hook(body: dict) -> None:
        blocks = body["message"]["content"]
        continuation = sum(1 for b in bodies if any(x["type"] == "tool_result" for x in b["message"]["content"]))
        if any(b["type"] == "tool_result" for b in blocks) and continuation < len(texts):
            blocks.append({"type": "text", "text": texts[continuation]})
        bodies.append(body)

    client.before_run(hook)
    return bodies


def test_a_text_run_streams_text_and_creates_a_thread(client):
    stream = client.run("hello there")
    types = [e.type for e, _ in stream]
    assert types[0] == EventType.RUN_STARTED and types[-1] == EventType.RUN_FINISHED
    assert EventType.TEXT_MESSAGE_CONTENT in types
    final = stream.snapshot
    assert final.status == "finished" and "You said: hello there" in final.last_text
    thread = client.threads.retrieve(stream.thread_id)
    assert thread.last_completed_run_id == final.run_id
    assert [m.role for m in thread.messages] == ["user", "assistant"]
    assert thread.messages[1].content[0].text == final.last_text


def test_a_second_turn_on_the_same_thread_finds_the_previous_run(client):
    first = client.run("one")
    first.result()
    second = client.run("two", thread_id=first.thread_id).result()
    assert "You said: two" in second.last_text and second.thread_id == first.thread_id
    page = client.threads.messages.list(first.thread_id)
    assert [m.role for m in page.messages] == ["user", "assistant", "user", "assistant"]


def test_the_tool_loop_runs_two_rounds_of_client_tools(client):
    calls: list[tuple[str, object]] = []
    client.register_tool("lookup_city", lambda name: calls.append(("lookup_city", name)) or {"city": name, "country": "FR"},
                         "Look a city up", {"type": "object", "properties": {"name": {"type": "string"}}})
    client.register_tool("weather_for", lambda city: calls.append(("weather_for", city)) or f"sunny in {city}",
                         "Weather", {"type": "object", "properties": {"city": {"type": "string"}}})
    name_next_tool(client, ['now weather_for {"city": "Paris"}'])

    stream = client.run('please lookup_city {"name": "Paris"}')
    pairs = list(stream)
    final = stream.snapshot
    assert calls == [("lookup_city", "Paris"), ("weather_for", "Paris")]
    assert stream.steps == 2 and final.status == "finished"
    assert final.last_text == "Tool weather_for returned: sunny in Paris"
    shown = [(e.tool_call_id, snap.tool_call(e.tool_call_id).result) for e, snap in pairs if e.type == EventType.TOOL_CALL_RESULT]
    assert [r for _, r in shown] == ['{"city": "Paris", "country": "FR"}', "sunny in Paris"]
    thread = client.threads.retrieve(stream.thread_id)
    assert thread.run_status == "idle" and not thread.pending_tool_call_ids


def test_several_tools_in_one_step_run_in_order(client):
    order = []
    client.register_tool("first_tool", lambda **kw: order.append("first_tool") or "1", "one")
    client.register_tool("second_tool", lambda **kw: order.append("second_tool") or "2", "two")
    final = client.run("call second_tool and first_tool").result()
    assert order == ["second_tool", "first_tool"]
    assert final.last_text == "Tool second_tool returned: 2\nTool first_tool returned: 1"


def test_a_tool_that_raises_becomes_an_error_result_and_the_loop_goes_on(client):
    def broken(**kwargs):
        raise RuntimeError("disk on fire")

    client.register_tool("broken_tool", broken, "Always fails")
    stream = client.run("try broken_tool")
    final = stream.result()
    assert final.status == "finished"
    call = next(c for m in final.messages for c in m.tool_calls if c.name == "broken_tool")
    assert call.is_error and call.result == "RuntimeError: disk on fire"
    assert final.last_text == "Tool broken_tool returned: Error: RuntimeError: disk on fire"


def test_an_unknown_tool_becomes_an_error_result(client):
    # The tool is declared to the server (so the model may call it) but has no function here.
    client.register_tool("ghost_tool", lambda: None, "Vanishes")
    client.unregister_tool("ghost_tool")
    client.before_run(lambda body: {**body, "tools": [{"name": "ghost_tool", "description": "x", "inputSchema": {"type": "object"}}]})
    final = client.run("use ghost_tool").result()
    assert "Tool ghost_tool returned: Error: LookupError: tool 'ghost_tool' is not registered on this client" in final.last_text


def test_a_tool_can_return_an_explicit_error_result(client):
    client.register_tool("picky_tool", lambda **kw: ToolResult("no such city", is_error=True), "Picky")
    final = client.run("picky_tool please").result()
    assert final.last_text == "Tool picky_tool returned: Error: no such city"


@pytest.mark.parametrize("max_steps", [0, 1, 3])
def test_max_steps_bounds_tool_rounds_exactly_and_leaves_the_run_paused(client, max_steps):
    calls = []
    client.register_tool("again_tool", lambda **kw: calls.append(1) or "ok", "Loops")
    name_next_tool(client, ["again_tool"] * 10)
    stream = client.run("start again_tool", max_steps=max_steps)
    with pytest.raises(MaxStepsExceeded) as info:
        stream.result()
    assert len(calls) == max_steps and stream.steps == max_steps and stream.max_steps_exceeded
    paused = info.value.snapshot
    assert paused.status == "awaiting_input" and [p.tool_name for p in paused.pending_tool_calls] == ["again_tool"]
    thread = client.threads.retrieve(stream.thread_id)
    assert thread.pending_tool_call_ids == [paused.pending_tool_calls[0].tool_call_id]
    assert thread.last_completed_run_id == paused.run_id


def test_without_auto_execute_the_run_pauses_and_results_can_be_submitted_later(client):
    ran = []
    client.register_tool("slow_tool", lambda **kw: ran.append(kw) or "never", "Manual")
    paused = client.run('run slow_tool {"n": 7}', auto_execute_tools=False).result()
    assert ran == [] and paused.status == "awaiting_input"
    [pending] = paused.pending_tool_calls
    assert pending.parsed_arguments() == {"n": 7}
    # Later, maybe from another process: answer the call and continue.
    final = client.submit_tool_results(paused.thread_id, paused.run_id, {pending.tool_call_id: {"answer": 42}}).result()
    assert final.status == "finished" and final.last_text == 'Tool slow_tool returned: {"answer": 42}'
    assert ran == []


def test_context_helpers_are_evaluated_again_for_every_continuation(client):
    counter = iter(range(100))
    client.add_context_helper("step", lambda: next(counter))
    client.add_context_helper("broken", lambda: 1 / 0)  # logged and left out, never fatal
    client.register_tool("tick_tool", lambda **kw: "tick", "Ticks")
    bodies = name_next_tool(client, ["tick_tool"])
    final = client.run("tick_tool", additional_context={"page": "home"}).result()
    assert final.status == "finished"
    assert [b["message"]["additionalContext"] for b in bodies] == [
        {"page": "home", "step": 0}, {"page": "home", "step": 1}, {"page": "home", "step": 2}]


def test_a_model_failure_raises_run_error_after_yielding_the_event(client):
    stream = client.run("!fail now")
    seen = []
    with pytest.raises(RunError) as info:
        for event, _ in stream:
            seen.append(event.type)
    assert seen[-1] == EventType.RUN_ERROR
    assert info.value.code == "LLM_SERVER_ERROR" and info.value.is_retryable
    assert info.value.snapshot.status == "error"
    assert client.threads.retrieve(stream.thread_id).last_run_error.code == "LLM_SERVER_ERROR"


def test_cancel_mid_stream_stops_reading_and_cancels_the_run_on_the_server(client):
    stream = client.run("!slow please")
    texts = 0
    started = time.monotonic()
    for event, _ in stream:
        if event.type == EventType.TEXT_MESSAGE_CONTENT:
            texts += 1
            if texts == 2:
                stream.cancel()
    assert time.monotonic() - started < 10
    assert stream.cancelled and stream.snapshot.status == "cancelled"
    deadline = time.monotonic() + 5
    while True:
        thread = client.threads.retrieve(stream.thread_id)
        if thread.run_status == "idle" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert thread.run_status == "idle" and thread.last_run_cancelled is True
    assistant = [m for m in thread.messages if m.role == "assistant"]
    assert assistant and assistant[-1].is_cancelled is True


@pytest.mark.parametrize("resume", [False, True], ids=["stream-cancels", "run-continues"])
def test_the_next_message_right_after_a_cancel_follows_the_cancelled_run(client, resume):
    # The cancel answers once the run's end is stored: the next run names the cancelled one as the
    # thread's last completed run, read from the server, with no waiting in between.
    stream = client.run("!slow please", resume=resume)
    for event, _ in stream:
        if event.type == EventType.TEXT_MESSAGE_CONTENT:
            stream.cancel()
    thread = client.threads.retrieve(stream.thread_id)
    assert thread.run_status == "idle" and thread.last_completed_run_id == stream.run_id
    assert client.run("next", thread_id=stream.thread_id).text().startswith("(offline model) You said: next")


def test_cancel_from_another_thread_interrupts_a_blocked_read(client):
    stream = client.run("!slow again")
    first = next(stream)
    assert first[0].type == EventType.RUN_STARTED
    timer = threading.Timer(0.5, stream.cancel)
    timer.start()
    started = time.monotonic()
    rest = list(stream)
    timer.join()
    assert time.monotonic() - started < 5
    assert stream.cancelled and len(rest) < 100


def test_a_streamable_tool_sees_partial_arguments_before_the_final_call(client, monkeypatch):
    import clientsdk._tools as tools_module

    monkeypatch.setattr(tools_module, "STREAM_THROTTLE_SECONDS", 0.0)
    seen = []
    client.register_tool("draw_tool", lambda **kw: seen.append(kw) or "drawn", "Draws", streamable=True)
    final = client.run('draw_tool {"title": "A long title to stream", "n": 12345}').result()
    assert final.last_text == "Tool draw_tool returned: drawn"
    assert seen[-1] == {"title": "A long title to stream", "n": 12345}
    partial = seen[:-1]
    assert len(partial) >= 2, seen
    assert any(p != seen[-1] for p in partial)


def test_components_are_offered_and_their_props_accumulate(client):
    client.register_component("WeatherCard", "Shows the weather",
                              {"type": "object", "properties": {"city": {"type": "string"}, "temp": {"type": "number"}}})
    bodies = name_next_tool(client, [])
    stream = client.run('show a WeatherCard {"city": "Oslo", "temp": -3}')
    final = stream.result()
    assert bodies[0]["availableComponents"][0]["name"] == "WeatherCard"
    comps = [c for m in final.messages for c in m.components]
    assert [(c.name, c.props, c.streaming) for c in comps] == [("WeatherCard", {"city": "Oslo", "temp": -3}, False)]
    state = client.components.update_state(stream.thread_id, comps[0].id, state={"open": True})
    assert state.state == {"open": True}


def test_thread_resources_round_trip(client):
    thread = client.threads.create(metadata={"topic": "t"})
    assert client.threads.update(thread.id, name="Renamed").name == "Renamed"
    assert thread.id in [t.id for t in client.threads.list(limit=100).threads]
    client.threads.delete(thread.id)
    from clientsdk import NotFoundError

    with pytest.raises(NotFoundError) as info:
        client.threads.retrieve(thread.id)
    assert info.value.code == "THREAD_NOT_FOUND"


def test_the_readme_example_runs_as_written(live_server_url, api_key, capsys, monkeypatch):
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "clientsdk" / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    # The example reads the server and the key from the environment, as the top README's does.
    monkeypatch.setenv("TAMBO_BASE_URL", live_server_url)
    monkeypatch.setenv("TAMBO_API_KEY", api_key)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
    out = capsys.readouterr().out
    assert out.strip() == 'Tool get_weather returned: {"city": "Paris", "forecast": ["sunny", "sunny"]}'
