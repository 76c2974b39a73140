"""Traces: an OTLP/HTTP receiver in the test (decoding with opentelemetry-proto) gets one trace per
run, continuing the request's `traceparent`, with the spans and GenAI attributes of docs/operations-telemetry.md
and the database statements under them; no message text in any span."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import Api
from tests.support.live import LiveServer, free_port
from tests.support.sse import read_events

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_SPAN = "00f067aa0ba902b7"
TEXT = "calculate {\"expression\": \"6*7\"} secret-words-91"


class Receiver:
    """An OTLP/HTTP trace endpoint: POST /v1/traces with a protobuf ExportTraceServiceRequest."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        self.spans: list = []
        self.raw: list[bytes] = []
        self.changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                with receiver.changed:
                    receiver.raw.append(body)
                    for resource_spans in request.resource_spans:
                        for scope_spans in resource_spans.scope_spans:
                            receiver.spans.extend(scope_spans.spans)
                    receiver.changed.notify_all()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, condition, timeout: float = 60.0):
        with self.changed:
            assert self.changed.wait_for(lambda: condition(self.spans), timeout), [s.name for s in self.spans]

    def close(self) -> None:
        self.server.shutdown()


def _traced(project, **env: str):
    from tools.models import ProjectTool

    ProjectTool.objects.create(project=project, name="calculate")
    receiver = Receiver()
    server = LiveServer("traced", {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "50",
                                   "OTEL_SERVICE_NAME": "tambo-test", **env})
    try:
        yield server, receiver
    finally:
        server.stop()
        receiver.close()


@pytest.fixture
def traced(transactional_db, project):
    # Set to false, as unset: no content.
    yield from _traced(project, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="false")


@pytest.fixture
def traced_with_content(transactional_db, project):
    yield from _traced(project, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")


def _attrs(span) -> dict:
    out = {}
    for kv in span.attributes:
        value = kv.value
        kind = value.WhichOneof("value")
        out[kv.key] = list(v.string_value for v in value.array_value.values) if kind == "array_value" \
            else getattr(value, kind)
    return out


def test_a_run_is_one_trace_with_agent_model_tool_and_database_spans(traced, api_key):
    server, receiver = traced
    api = Api(server.url, api_key)
    response = api.post("/v1/threads/runs", {"userKey": "alice", "message": {
        "role": "user", "content": [{"type": "text", "text": TEXT}]}}, stream=True,
        headers={"traceparent": f"00-{TRACE_ID}-{PARENT_SPAN}-01"})
    events = list(read_events(response))
    assert events[-1]["type"] == "RUN_FINISHED"
    run_id = events[0]["runId"]

    def complete(spans):
        names = {s.name for s in spans}
        return "invoke_agent" in names and "execute_tool calculate" in names and sum(
            s.name == "chat offline" for s in spans) >= 2 and any(s.name == "POST /v1/threads/runs" for s in spans)

    receiver.wait_for(complete)
    spans = [s for s in receiver.spans if s.trace_id.hex() == TRACE_ID]
    by_name = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    [request] = by_name["POST /v1/threads/runs"]
    assert request.parent_span_id.hex() == PARENT_SPAN  # the incoming traceparent continued
    [agent] = by_name["invoke_agent"]
    assert agent.parent_span_id == request.span_id
    agent_attrs = _attrs(agent)
    assert agent_attrs["gen_ai.operation.name"] == "invoke_agent" and agent_attrs["tambo.run.id"] == run_id
    assert agent_attrs["gen_ai.usage.output_tokens"] > 0
    chats = by_name["chat offline"]
    assert len(chats) == 2  # the call that asked for the tool, and the answer after its result
    for chat in chats:
        attrs = _attrs(chat)
        assert chat.parent_span_id == agent.span_id
        assert (attrs["gen_ai.operation.name"], attrs["gen_ai.provider.name"], attrs["gen_ai.request.model"],
                attrs["gen_ai.response.model"]) == ("chat", "offline", "offline", "offline")
        assert "gen_ai.usage.input_tokens" in attrs and attrs["gen_ai.usage.output_tokens"] > 0
    assert sorted(_attrs(c)["gen_ai.response.finish_reasons"][0] for c in chats) == ["stop", "tool_calls"]
    [tool] = by_name["execute_tool calculate"]
    assert tool.parent_span_id == agent.span_id and _attrs(tool)["gen_ai.tool.name"] == "calculate"
    # The run's statements (storing steps, releasing the lock) are spans of the same trace, under the run.
    statements = [s for s in spans if s.name in ("SELECT", "INSERT", "UPDATE")]
    assert any(s.parent_span_id == agent.span_id and s.name == "INSERT" for s in statements)
    assert all(s.parent_span_id in {x.span_id for x in spans} for s in statements)
    # No message content anywhere in what was exported.
    for body in receiver.raw:
        assert b"secret-words-91" not in body and b"6*7" not in body
    assert not {"gen_ai.input.messages", "gen_ai.output.messages"} & set().union(*(_attrs(c) for c in chats))


def test_with_content_capture_on_the_model_spans_carry_the_messages_and_the_answers(traced_with_content, api_key):
    server, receiver = traced_with_content
    response = Api(server.url, api_key).post("/v1/threads/runs", {"userKey": "alice", "message": {
        "role": "user", "content": [{"type": "text", "text": TEXT}]}}, stream=True)
    events = list(read_events(response))
    assert events[-1]["type"] == "RUN_FINISHED"

    receiver.wait_for(lambda spans: sum(s.name == "chat offline" for s in spans) >= 2)
    chats = [_attrs(s) for s in receiver.spans if s.name == "chat offline"]
    asked, answered = sorted(chats, key=lambda a: a["gen_ai.response.finish_reasons"][0] != "tool_calls")
    inputs = json.loads(asked["gen_ai.input.messages"])
    assert {"role": "user", "parts": [{"type": "text", "content": TEXT}]} in inputs
    [call_out] = json.loads(asked["gen_ai.output.messages"])
    assert call_out["role"] == "assistant" and call_out["finish_reason"] == "tool_calls"
    [tool_call] = [p for p in call_out["parts"] if p["type"] == "tool_call"]
    assert tool_call["name"] == "calculate" and tool_call["arguments"] == {"expression": "6*7"}
    # The second call sees the tool's result under the call's id, and its answer is the run's text.
    then = json.loads(answered["gen_ai.input.messages"])
    [result] = [m for m in then if m["role"] == "tool"]
    assert result["parts"][0]["type"] == "tool_call_response" and result["parts"][0]["id"] == tool_call["id"]
    assert "42" in result["parts"][0]["response"]
    [final] = json.loads(answered["gen_ai.output.messages"])
    texts: dict[str, str] = {}
    for event in events:
        if event["type"] == "TEXT_MESSAGE_CONTENT":
            texts[event["messageId"]] = texts.get(event["messageId"], "") + event["delta"]
    assert final == {"role": "assistant", "parts": [{"type": "text", "content": list(texts.values())[-1]}],
                     "finish_reason": "stop"}
