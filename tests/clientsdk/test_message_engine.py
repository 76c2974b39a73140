"""MessageEngine: turns, plugins, tools, abort and errors, through the public surface.

The HTTP tests run a tiny real gateway stand-in (http.server in a thread), so
the default provider, the SSE reader and the abort path meet a real socket.
"""

import asyncio
import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from clientsdk.errors import APIStatusError
from clientsdk.message import (
    AbortError,
    ChatCompletionsHTTPError,
    ChatCompletionsProvider,
    ChatCompletionsStreamError,
    MessageEngine,
    Plugin,
    tool_plugin,
)
from clientsdk.message.context import HOOK_NAMES

CREATED = 1700000000


# -- helpers ----------------------------------------------------------------


def chunk(delta=None, finish_reason=None, *, message=None, index=0, **extra):
    choice = {"index": index, "finish_reason": finish_reason}
    if delta is not None:
        choice["delta"] = delta
    if message is not None:
        choice["message"] = message
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": CREATED,
            "model": "test-model", "choices": [choice], **extra}


def text_chunks(*pieces, finish_reason="stop"):
    first, *rest = pieces
    return ([chunk({"role": "assistant", "content": first})] + [chunk({"content": p}) for p in rest]
            + [chunk({}, finish_reason)])


def tool_call_chunks(*calls):
    """Stream tool calls the way the gateway does: id/type/name once, then argument fragments."""
    first = [{"index": i, "id": cid, "type": "function", "function": {"name": name, "arguments": ""}}
             for i, (cid, name, _args) in enumerate(calls)]
    out = [chunk({"role": "assistant", "tool_calls": first})]
    for i, (_cid, _name, args) in enumerate(calls):
        half = len(args) // 2
        out += [chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]})
                for part in (args[:half], args[half:])]
    return out + [chunk({}, "tool_calls")]


def completion(content, finish_reason="stop"):
    return {"id": "chatcmpl-2", "object": "chat.completion", "created": CREATED, "model": "test-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}


class ScriptedProvider:
    """Answers request N with response N (a list of chunks, a dict, or a callable); records bodies."""

    def __init__(self, *responses):
        self.responses = list(responses)
        self.bodies = []

    def __call__(self, body, abort_signal):
        self.bodies.append(copy.deepcopy(dict(body)))
        response = self.responses.pop(0)
        return response(body, abort_signal) if callable(response) else copy.deepcopy(response)


class Recorder(Plugin):
    """Logs (name, hook) for every hook but on_error, whose mere presence changes error handling."""

    def __init__(self, name, log, **options):
        super().__init__(name=name, **options)
        self.log = log


def _recording_hook(hook):
    def method(self, context):
        self.log.append((self.name, hook))
    return method


for _hook in HOOK_NAMES:
    if _hook != "on_error":
        setattr(Recorder, _hook, _recording_hook(_hook))


class ErrorRecorder(Recorder):
    """A Recorder that also handles errors (so they are not re-raised)."""

    on_error = _recording_hook("on_error")


def engine_with_states(provider, **options):
    states = []
    engine = MessageEngine(provider, on_state_change=lambda *s: states.append(s), **options)
    return engine, states


def run_in_thread(target):
    outcome = {}

    def run():
        try:
            outcome["result"] = target()
        except BaseException as exc:  # surfaced by the test's asserts
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def abort_promptly(engine, thread):
    """Abort the engine's turn running in `thread`: the abort must report success within its 5 s
    timeout, well before the 10 s and 30 s waits of the turns it stops (a bound, not a speed target)."""
    assert engine.abort_request(timeout=5) is True
    thread.join(5)


# -- a plain turn ------------------------------------------------------------


def test_a_plain_turn_goes_requesting_completing_completed():
    provider = ScriptedProvider(text_chunks("Hel", "lo"))
    engine, states = engine_with_states(provider)
    assert engine.request_state == "idle" and engine.processing_state is None

    assert engine.send_message("  hi  ") == "completed"

    assert states == [("processing", "requesting"), ("processing", "completing"), ("completed", None)]
    assert engine.processing_state is None
    user, assistant = engine.messages
    assert user["role"] == "user" and user["content"] == "hi"
    assert user["metadata"]["createdAt"] == user["metadata"]["updatedAt"]
    assert isinstance(user["metadata"]["createdAt"], int)
    assert assistant["role"] == "assistant" and assistant["content"] == "Hello"
    assert "loading" not in assistant
    assert assistant["metadata"]["createdAt"] == CREATED
    assert assistant["metadata"]["model"] == "test-model"


def test_the_request_carries_no_ui_fields_and_no_placeholder():
    seen = {}

    def respond(body, abort_signal):
        seen["last_message"] = dict(engine.messages[-1])
        return text_chunks("ok")

    provider = ScriptedProvider(respond)
    engine = MessageEngine(provider, initial_messages=[
        {"role": "system", "content": "be brief", "state": {"x": 1}, "loading": False},
    ])
    engine.send_message("hi")

    assert provider.bodies[0]["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]
    # The placeholder is appended after on_before_request, so it is in the
    # conversation while the provider runs but never in its own request.
    assert seen["last_message"] == {"role": "", "content": "", "loading": True}


def test_the_first_chunk_clears_loading():
    loading_seen = []

    class Watch(Plugin):
        def on_completion_chunk(self, context):
            loading_seen.append("loading" in context.current_message)

    engine = MessageEngine(ScriptedProvider(text_chunks("a", "b")), plugins=[Watch()])
    engine.send_message("hi")
    assert loading_seen == [False, False, False]


def test_blank_text_is_refused_without_a_state_change():
    engine, states = engine_with_states(ScriptedProvider())
    assert engine.send_message("   \n") is None
    assert engine.send_message("") is None
    assert engine.request_state == "idle" and engine.messages == [] and states == []


def test_a_send_while_processing_is_refused():
    outcomes = []

    class SendAgain(Plugin):
        def on_before_request(self, context):
            outcomes.append(engine.send_message("second"))

    engine = MessageEngine(ScriptedProvider(text_chunks("ok")), plugins=[SendAgain()])
    assert engine.send_message("first") == "completed"
    assert outcomes == [None]
    assert [m["content"] for m in engine.messages] == ["first", "ok"]


def test_keep_list_then_drop_list_and_reassigned_messages_are_filtered():
    class Inject(Plugin):
        def on_before_request(self, context):
            context.request_body["messages"] = [
                {"role": "system", "content": "s", "state": {"secret": 1}, "name": "n"},
                *context.request_body["messages"],
            ]

    provider = ScriptedProvider(text_chunks("ok"))
    engine = MessageEngine(provider, plugins=[Inject()], request_message_fields=["role", "content", "state"],
                           request_message_fields_exclude=["state"])
    engine.send_message("hi")
    assert provider.bodies[0]["messages"] == [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]


def test_only_choice_zero_is_used_and_message_wins_over_delta():
    stream = [
        {"id": "c", "created": CREATED, "choices": [
            {"index": 1, "delta": {"role": "assistant", "content": "IGNORED"}},
            {"index": 0, "message": {"role": "assistant", "content": "full"}, "delta": {"content": "delta"}},
        ]},
        {"id": "c", "created": CREATED, "choices": [{"index": 0, "finish_reason": "stop"}]},
        {"id": "c", "created": CREATED, "choices": [], "usage": {"total_tokens": 9}},
    ]
    engine = MessageEngine(ScriptedProvider(stream))
    assert engine.send_message("hi") == "completed"
    assistant = engine.messages[-1]
    assert assistant["content"] == "full"
    assert assistant["metadata"]["usage"] == {"total_tokens": 9}


def test_a_global_chunk_handler_decides_whether_the_default_merge_runs():
    def handler(context, run_default):
        if context.chunk["choices"][0].get("delta", {}).get("content") != "skip":
            run_default()

    engine = MessageEngine(ScriptedProvider(text_chunks("a", "skip", "b")), on_completion_chunk=handler)
    engine.send_message("hi")
    assert engine.messages[-1]["content"] == "ab"


# -- provider return kinds ------------------------------------------------------


async def _async_chunks():
    for item in text_chunks("as", "ync"):
        await asyncio.sleep(0)
        yield item


async def _awaitable_completion():
    await asyncio.sleep(0)
    return completion("awaited")


async def _awaitable_generator():
    await asyncio.sleep(0)
    return _async_chunks()


@pytest.mark.parametrize("make_response, expected", [
    (lambda: completion("one completion"), "one completion"),
    (lambda: iter(text_chunks("it", "erator")), "iterator"),
    (lambda: _awaitable_completion(), "awaited"),
    (lambda: _async_chunks(), "async"),
    (lambda: _awaitable_generator(), "async"),
])
def test_every_provider_return_kind_is_normalised(make_response, expected):
    engine = MessageEngine(lambda body, signal: make_response())
    assert engine.send_message("hi") == "completed"
    assert engine.messages[-1]["content"] == expected
    assert engine.messages[-1]["role"] == "assistant"


def test_a_non_dict_chunk_is_an_error():
    engine = MessageEngine(lambda body, signal: iter(["not a chunk"]))
    with pytest.raises(TypeError, match="expected a dict"):
        engine.send_message("hi")
    assert engine.request_state == "error"


# -- default plugins --------------------------------------------------------------


def test_the_length_plugin_asks_to_continue():
    provider = ScriptedProvider(text_chunks("part one", finish_reason="length"), text_chunks(" part two"))
    engine = MessageEngine(provider)
    assert engine.send_message("long story") == "completed"
    assert [m["content"] for m in engine.messages] == [
        "long story", "part one", "Please continue with your previous answer.", " part two",
    ]
    assert provider.bodies[1]["messages"][-1] == {"role": "user", "content": "Please continue with your previous answer."}


def test_the_thinking_plugin_flags_reasoning_and_clears_at_turn_end():
    flags = []

    class Watch(Plugin):
        def on_completion_chunk(self, context):
            flags.append(context.current_message["state"].get("thinking"))

    stream = [chunk({"role": "assistant", "reasoning_content": "hmm"}), chunk({"reasoning_content": "..."}),
              chunk({"content": "answer"}), chunk({}, "stop")]
    engine = MessageEngine(ScriptedProvider(stream), plugins=[Watch()])
    engine.send_message("q")
    assert flags == [True, True, False, False]
    assistant = engine.messages[-1]
    assert assistant["reasoning_content"] == "hmm..." and "thinking" not in assistant["state"]


def test_the_fallback_role_plugin_sends_an_empty_role_as_assistant():
    provider = ScriptedProvider([chunk({"content": "no role sent"}), chunk({}, "stop")], text_chunks("ok"))
    engine = MessageEngine(provider)
    engine.send_message("one")
    assert engine.messages[-1]["role"] == ""
    engine.send_message("two")
    assert provider.bodies[1]["messages"][1] == {"role": "assistant", "content": "no role sent"}


# -- plugin order, replacement, disabling ----------------------------------------


def test_hooks_run_in_plugin_order_and_repeat_per_requested_round():
    log = []

    class Again(Recorder):
        def on_after_request(self, context):
            super().on_after_request(context)
            if len(log) < 20 and not context.custom_context.get("again"):
                context.set_custom_context({"again": True})
                context.request_next()

    provider = ScriptedProvider([chunk({"content": "x"}, "stop")], [chunk({"content": "y"}, "stop")])
    engine = MessageEngine(provider, plugins=[Again("a", log), Recorder("b", log)])
    engine.send_message("hi")

    per_request = [("a", "on_before_request"), ("b", "on_before_request"),
                   ("a", "on_completion_chunk"), ("b", "on_completion_chunk"),
                   ("a", "on_after_request"), ("b", "on_after_request")]
    assert log == ([("a", "on_turn_start"), ("b", "on_turn_start")] + per_request * 2
                   + [("a", "on_turn_end"), ("b", "on_turn_end"), ("a", "on_finally"), ("b", "on_finally")])


def test_a_later_plugin_with_the_same_name_replaces_the_earlier_one():
    log = []
    provider = ScriptedProvider(text_chunks("cut", finish_reason="length"))
    engine = MessageEngine(provider, plugins=[Recorder("x", log), Recorder("length", log), Recorder("x", log)])
    assert engine.send_message("hi") == "completed"
    # The default length plugin is gone, so there was no continuation request.
    assert len(provider.bodies) == 1
    names = [getattr(p, "name", None) for p in engine.plugins]
    assert names == ["fallbackRole", "thinking", "length", "x"]
    assert log.count(("x", "on_turn_start")) == 1


def test_disabled_plugins_are_skipped():
    log = []
    provider = ScriptedProvider(text_chunks("cut", finish_reason="length"))
    engine = MessageEngine(provider, plugins=[
        Recorder("off", log, disabled=True),
        Recorder("off-by-callable", log, disabled=lambda context: True),
        Plugin(name="length", disabled=True),
        {"name": "dict-plugin", "on_turn_start": lambda context: log.append(("dict", "on_turn_start"))},
    ])
    engine.send_message("hi")
    assert log == [("dict", "on_turn_start")]
    assert len(provider.bodies) == 1


def test_request_next_outside_after_request_is_an_error():
    class Wrong(Plugin):
        def on_turn_start(self, context):
            context.request_next()

    engine = MessageEngine(ScriptedProvider(), plugins=[Wrong()])
    with pytest.raises(RuntimeError, match="on_after_request"):
        engine.send_message("hi")


# -- tools ----------------------------------------------------------------------------

WEATHER_TOOL = {"type": "function", "function": {"name": "weather", "description": "d", "parameters": {}}}


def test_a_tool_turn_runs_calls_in_order_and_requests_again():
    running_seen = []

    def call_tool(tool_call):
        call_id = tool_call["id"]
        running_seen.append(engine.messages[1]["state"]["toolCall"][call_id]["status"])
        args = json.loads(tool_call["function"]["arguments"])
        if call_id == "call_str":
            return f"sunny in {args['city']}"
        if call_id == "call_dict":
            return {"temp": 21, "unit": "C"}
        raise RuntimeError("tool exploded")

    provider = ScriptedProvider(
        tool_call_chunks(("call_str", "weather", '{"city": "Oslo"}'),
                         ("call_dict", "weather", '{"city": "Rome"}'),
                         ("call_fail", "weather", '{"city": "Nowhere"}')),
        text_chunks("Done."),
    )
    engine, states = engine_with_states(provider, plugins=[tool_plugin(lambda: [WEATHER_TOOL], call_tool)])
    assert engine.send_message("weather?") == "completed"

    assert ("processing", "calling-tools") in states
    assert states.index(("processing", "calling-tools")) < len(states) - 3
    assert running_seen == ["running"] * 3
    user, assistant, *tool_messages, final = engine.messages
    assert [m["tool_call_id"] for m in tool_messages] == ["call_str", "call_dict", "call_fail"]
    assert [m["content"] for m in tool_messages] == [
        "sunny in Oslo", json.dumps({"temp": 21, "unit": "C"}), "Tool call failed.",
    ]
    assert {cid: s["status"] for cid, s in assistant["state"]["toolCall"].items()} == {
        "call_str": "success", "call_dict": "success", "call_fail": "failed",
    }
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{"city": "Oslo"}'
    assert final["content"] == "Done."
    assert provider.bodies[0]["tools"] == [WEATHER_TOOL]
    second = provider.bodies[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "tool", "tool", "tool"]
    assert "state" not in second[1] and "metadata" not in second[2]


def test_iterator_and_async_tool_results_stream_into_the_content():
    async def async_pieces():
        yield "as"
        yield "ync"

    results = {
        "c1": lambda: iter(["par", "tial"]),
        "c2": lambda: iter([{"a": 1}, {"b": {"c": "x"}}, {"b": {"c": "y"}}]),
        "c3": async_pieces,
    }
    provider = ScriptedProvider(
        tool_call_chunks(("c1", "t", "{}"), ("c2", "t", "{}"), ("c3", "t", "{}")), text_chunks("ok"))
    engine = MessageEngine(provider, plugins=[tool_plugin(lambda: [], lambda call: results[call["id"]]())])
    engine.send_message("go")
    contents = [m["content"] for m in engine.messages if m["role"] == "tool"]
    assert contents == ["partial", json.dumps({"a": 1, "b": {"c": "xy"}}), "async"]
    assert "tools" not in provider.bodies[0]


def test_tool_rounds_are_bounded_by_max_tool_rounds():
    calls = []
    rounds = [tool_call_chunks((f"call_{i}", "t", "{}")) for i in range(4)]
    provider = ScriptedProvider(*rounds)
    engine = MessageEngine(provider, plugins=[
        tool_plugin(lambda: [], lambda call: calls.append(call["id"]) or "ok", max_tool_rounds=2)])
    assert engine.send_message("loop") == "completed"

    assert len(provider.bodies) == 3
    assert calls == ["call_0", "call_1"]
    last_tool = engine.messages[-1]
    assert last_tool["role"] == "tool" and last_tool["tool_call_id"] == "call_2"
    assert "limit of 2 tool rounds" in last_tool["content"]
    assert engine.messages[-2]["state"]["toolCall"]["call_2"]["status"] == "cancelled"


def test_the_round_count_starts_again_each_turn():
    provider = ScriptedProvider(tool_call_chunks(("a", "t", "{}")), text_chunks("one"),
                                tool_call_chunks(("b", "t", "{}")), text_chunks("two"))
    engine = MessageEngine(provider, plugins=[tool_plugin(lambda: [], lambda call: "ok", max_tool_rounds=1)])
    engine.send_message("first")
    engine.send_message("second")
    assert engine.messages[-1]["content"] == "two"
    assert len(provider.bodies) == 4


# -- abort --------------------------------------------------------------------------------


def test_abort_mid_stream_from_another_thread_ends_the_turn_as_aborted():
    first_chunk = threading.Event()
    log = []

    def slow(body, abort_signal):
        yield chunk({"role": "assistant", "content": "partial"})
        abort_signal.wait(10)
        yield chunk({"content": " never merged"})

    engine = MessageEngine(ScriptedProvider(slow), plugins=[ErrorRecorder("r", log)],
                           on_state_change=lambda s, p: p == "completing" and first_chunk.set())
    thread, outcome = run_in_thread(lambda: engine.send_message("hi"))
    assert first_chunk.wait(5)

    abort_promptly(engine, thread)

    assert outcome == {"result": "aborted"}
    assert engine.request_state == "aborted" and engine.processing_state is None
    assert ("r", "on_turn_end") in log and ("r", "on_error") not in log and ("r", "on_finally") in log
    assert engine.messages[-1]["content"] == "partial"


def test_abort_without_a_turn_returns_at_once():
    assert MessageEngine(ScriptedProvider()).abort_request() is True


def test_abort_from_a_hook_stops_before_the_provider_is_called():
    class AbortEarly(Plugin):
        def on_before_request(self, context):
            assert engine.abort_request() is False

    provider = ScriptedProvider()
    engine = MessageEngine(provider, plugins=[AbortEarly()])
    assert engine.send_message("hi") == "aborted"
    assert provider.bodies == []


def test_abort_while_a_tool_runs_cancels_it_and_the_remaining_calls():
    tool_started = threading.Event()

    async def slow_tool():
        tool_started.set()
        await asyncio.sleep(30)
        return "never"

    provider = ScriptedProvider(tool_call_chunks(("slow", "t", "{}"), ("next", "t", "{}")))
    engine = MessageEngine(provider, plugins=[tool_plugin(lambda: [], lambda call: slow_tool())])
    thread, outcome = run_in_thread(lambda: engine.send_message("go"))
    assert tool_started.wait(5)
    assert engine.processing_state == "calling-tools"
    assert engine.abort_request(timeout=5) is True
    thread.join(5)

    assert outcome == {"result": "aborted"}
    assistant = engine.messages[1]
    assert {k: v["status"] for k, v in assistant["state"]["toolCall"].items()} == {
        "slow": "cancelled", "next": "cancelled"}
    assert [m["content"] for m in engine.messages[2:]] == ["Tool call cancelled.", "Tool call cancelled."]
    assert len(provider.bodies) == 1


# -- errors ---------------------------------------------------------------------------------


def failing_provider(body, abort_signal):
    raise RuntimeError("provider down")


def test_an_error_is_re_raised_when_no_plugin_handles_it():
    log = []
    engine, states = engine_with_states(failing_provider, plugins=[Recorder("r", log)])
    with pytest.raises(RuntimeError, match="provider down"):
        engine.send_message("hi")
    assert engine.request_state == "error" and states[-1] == ("error", None)
    assert ("r", "on_turn_end") not in log and ("r", "on_finally") in log
    assert "loading" not in engine.messages[-1]


def test_an_error_goes_to_every_on_error_hook_instead_of_the_caller():
    errors = []

    class Catch(Plugin):
        def on_error(self, context):
            errors.append(context.error)

    engine = MessageEngine(failing_provider, plugins=[Catch(name="one"), Catch(name="two")])
    assert engine.send_message("hi") == "error"
    assert [str(e) for e in errors] == ["provider down", "provider down"]


def test_a_disabled_on_error_hook_does_not_swallow_the_error():
    class Catch(Plugin):
        def on_error(self, context):
            pass

    engine = MessageEngine(failing_provider, plugins=[Catch(disabled=True)])
    with pytest.raises(RuntimeError):
        engine.send_message("hi")


def test_every_after_request_hook_runs_even_when_one_fails():
    log = []

    class Boom(Plugin):
        def on_after_request(self, context):
            raise ValueError("after failed")

    engine = MessageEngine(ScriptedProvider(text_chunks("ok")), plugins=[Boom(), Recorder("r", log)])
    with pytest.raises(ValueError, match="after failed"):
        engine.send_message("hi")
    assert ("r", "on_after_request") in log


# -- the default provider against a real HTTP server ----------------------------------------


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.server.seen.append({"path": self.path, "headers": dict(self.headers), "body": body})
        try:
            self.server.respond(self, body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client aborted

    def log_message(self, *args):
        pass

    def send_sse(self, events, *, done=True, hang=False):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for event in events:
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
        if hang:
            self.server.release.wait(30)
        elif done:
            self.wfile.write(b"data: [DONE]\n\n")

    def send_json(self, status, body, headers=()):
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def gateway():
    servers = []

    def start(respond):
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.respond, server.seen, server.release = respond, [], threading.Event()
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return SimpleNamespace(url=f"http://127.0.0.1:{server.server_port}", seen=server.seen)

    yield start
    for server in servers:
        server.release.set()
        server.shutdown()
        server.server_close()


def test_the_provider_streams_from_the_gateway(gateway):
    server = gateway(lambda handler, body: handler.send_sse(text_chunks("Hi", " there")))
    engine = MessageEngine(ChatCompletionsProvider(server.url, "sk-test", model="fast"))
    assert engine.send_message("hello") == "completed"
    assert engine.messages[-1]["content"] == "Hi there"

    request = server.seen[0]
    assert request["path"] == "/api/chat/completions"
    assert request["headers"]["x-api-key"] == "sk-test"
    assert request["body"] == {"messages": [{"role": "user", "content": "hello"}], "stream": True, "model": "fast"}


def test_the_provider_reads_a_non_streamed_answer(gateway):
    server = gateway(lambda handler, body: handler.send_json(200, completion("whole")))
    engine = MessageEngine(ChatCompletionsProvider(server.url + "/", "k"))
    assert engine.send_message("hi") == "completed"
    assert engine.messages[-1]["content"] == "whole"
    assert engine.messages[-1]["metadata"]["usage"]["total_tokens"] == 5


def test_an_http_500_is_an_error_turn_not_an_empty_reply(gateway):
    error = {"error": {"message": "upstream exploded", "type": "server_error", "code": None, "param": None}}
    server = gateway(lambda handler, body: handler.send_json(500, error))
    engine, states = engine_with_states(ChatCompletionsProvider(server.url, "k"))
    with pytest.raises(ChatCompletionsHTTPError, match="upstream exploded") as caught:
        engine.send_message("hi")
    assert caught.value.status_code == 500 and caught.value.body == error
    assert engine.request_state == "error" and ("completed", None) not in states
    assert engine.messages[-1] == {"role": "", "content": ""}


def test_a_429_keeps_retry_after_in_seconds_and_is_the_clients_rate_limit_status_error(gateway):
    server = gateway(lambda handler, body: handler.send_json(
        429, {"error": {"message": "slow down", "code": "rate_limit_exceeded"}}, headers=[("Retry-After", "7")]))
    with pytest.raises(ChatCompletionsHTTPError) as caught:
        list(ChatCompletionsProvider(server.url, "k")({"messages": []}))
    assert caught.value.status_code == 429 and caught.value.retry_after == 7.0
    # One error tree: the engine's errors are the client's APIStatusError with the answer's code.
    assert isinstance(caught.value, APIStatusError) and caught.value.code == "rate_limit_exceeded"


def test_an_unreadable_retry_after_is_ignored(gateway):
    server = gateway(lambda handler, body: handler.send_json(
        429, {"error": {"message": "slow down"}}, headers=[("Retry-After", "soon")]))
    with pytest.raises(ChatCompletionsHTTPError) as caught:
        list(ChatCompletionsProvider(server.url, "k")({"messages": []}))
    assert caught.value.retry_after is None and caught.value.code is None


def test_an_error_event_mid_stream_is_an_error(gateway):
    server = gateway(lambda handler, body: handler.send_sse(
        [chunk({"role": "assistant", "content": "par"}), {"error": {"message": "vendor failed"}}]))
    errors = []
    engine = MessageEngine(ChatCompletionsProvider(server.url, "k"),
                           plugins=[{"on_error": lambda context: errors.append(context.error)}])
    assert engine.send_message("hi") == "error"
    assert isinstance(errors[0], ChatCompletionsStreamError) and "vendor failed" in str(errors[0])


def test_abort_stops_a_blocked_read_promptly(gateway):
    server = gateway(lambda handler, body: handler.send_sse([chunk({"role": "assistant", "content": "x"})],
                                                              hang=True))
    first_chunk = threading.Event()
    engine = MessageEngine(ChatCompletionsProvider(server.url, "k", timeout=30),
                           on_state_change=lambda s, p: p == "completing" and first_chunk.set())
    thread, outcome = run_in_thread(lambda: engine.send_message("hi"))
    assert first_chunk.wait(5)

    abort_promptly(engine, thread)
    assert outcome == {"result": "aborted"}
    assert engine.messages[-1]["content"] == "x"


def test_abort_while_waiting_for_response_headers_returns_promptly(gateway):
    received = threading.Event()

    def never_answer(handler, body):
        received.set()
        handler.server.release.wait(30)

    server = gateway(never_answer)
    provider = ChatCompletionsProvider(server.url, "k", timeout=30)
    engine = MessageEngine(provider)
    thread, outcome = run_in_thread(lambda: engine.send_message("hi"))
    assert received.wait(5)

    abort_promptly(engine, thread)
    assert outcome == {"result": "aborted"}


def test_the_provider_raises_abort_error_when_already_aborted():
    signal = threading.Event()
    signal.set()
    with pytest.raises(AbortError):
        next(ChatCompletionsProvider("http://127.0.0.1:9", "k")({"messages": []}, signal))


def test_a_keyboard_interrupt_does_not_leave_the_engine_processing():
    def interrupted(body, abort_signal):
        raise KeyboardInterrupt

    engine = MessageEngine(ScriptedProvider(interrupted, text_chunks("ok")))
    with pytest.raises(KeyboardInterrupt):
        engine.send_message("hi")
    assert engine.request_state == "aborted"
    assert engine.send_message("again") == "completed"


def test_the_provider_is_read_once_per_turn():
    class Swap(Plugin):
        def on_after_request(self, context):
            engine.response_provider = ScriptedProvider(text_chunks("from the new provider"))
            if len(first.bodies) == 1:
                context.request_next()

    first = ScriptedProvider(text_chunks("one"), text_chunks("two"))
    engine = MessageEngine(first, plugins=[Swap()])
    engine.send_message("hi")
    assert [m["content"] for m in engine.messages[1:]] == ["one", "two"]
    engine.send_message("next")
    assert engine.messages[-1]["content"] == "from the new provider"


def test_a_send_from_another_thread_while_processing_is_refused():
    in_provider, release = threading.Event(), threading.Event()

    def blocking(body, abort_signal):
        in_provider.set()
        release.wait(5)
        return completion("first answer")

    engine = MessageEngine(ScriptedProvider(blocking))
    thread, outcome = run_in_thread(lambda: engine.send_message("first"))
    assert in_provider.wait(5)
    assert engine.send_message("second") is None
    release.set()
    thread.join(5)
    assert outcome == {"result": "completed"}
    assert [m["content"] for m in engine.messages] == ["first", "first answer"]
