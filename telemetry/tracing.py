"""Traces with the OpenTelemetry SDK (docs/operations-telemetry.md), exported over OTLP/HTTP, on only when
`OTEL_EXPORTER_OTLP_ENDPOINT` is set.

When it is not set, `ENABLED` stays False, the SDK is never imported, and every hook below returns
at its first line: the run path pays one function call per run and per model step, nothing per
token. When it is set: a server span per request (continuing an incoming `traceparent`), under it
`invoke_agent` per run, `chat <model>` per model call and `execute_tool <name>` per tool call,
with the GenAI semantic-convention attributes, and a span per SQL statement under whichever is
current (the database worker threads get the caller's context: core/db.py). No message content is
put in a span (names, ids, counts and codes only) unless OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
is true: then the `chat <model>` spans carry the messages sent and the answer (telemetry/content.py).
"""
from __future__ import annotations

import contextlib
import os
from typing import Any

ENABLED = False
CAPTURE_CONTENT = False  # the messages on the `chat` spans; read once, with the tracer
_tracer: Any = None
_NO_SPAN = contextlib.nullcontext()


def configure() -> None:
    """Sets the process's tracer provider up, once, if an OTLP endpoint is configured."""
    global ENABLED, CAPTURE_CONTENT, _tracer
    if ENABLED or not (os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                       or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        return
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "tambo-django")})
    provider = TracerProvider(resource=resource)
    # The exporter reads the endpoint, headers and timeout from the standard OTEL_EXPORTER_OTLP_* variables.
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _tracer = trace.get_tracer("tambo")
    ENABLED = True
    from telemetry import content

    CAPTURE_CONTENT = content.capture_enabled()
    from django.db.backends.signals import connection_created

    from core import db

    db.propagate_context = True  # database spans nest under the run that asked for the statement
    connection_created.connect(_install_statement_spans, dispatch_uid="telemetry-statement-spans")


def shutdown() -> None:
    """Flushes the spans not exported yet (tests, and a process that stops)."""
    if ENABLED:
        from opentelemetry import trace

        trace.get_tracer_provider().force_flush()


# --- requests ------------------------------------------------------------------------------------

def request_span_start(request) -> tuple[Any, Any] | None:
    """A server span for `request`, current until `request_span_end`; None when tracing is off."""
    if not ENABLED:
        return None
    from opentelemetry import context, propagate, trace

    parent = propagate.extract(request.headers)
    span = _tracer.start_span(f"{request.method}", context=parent, kind=trace.SpanKind.SERVER,
                              attributes={"http.request.method": request.method})
    token = context.attach(trace.set_span_in_context(span, parent))
    return span, token


def request_span_end(started, *, route: str, status: int) -> None:
    if started is None:
        return
    from opentelemetry import context

    span, token = started
    span.update_name(f"{span.name} {route}")
    span.set_attribute("http.route", route)
    span.set_attribute("http.response.status_code", status)
    span.end()
    context.detach(token)


def current_trace_id() -> str | None:
    if not ENABLED:
        return None
    from opentelemetry import trace

    span_context = trace.get_current_span().get_span_context()
    return format(span_context.trace_id, "032x") if span_context.is_valid else None


# --- runs ----------------------------------------------------------------------------------------

def run_span_start(meter) -> Any:
    """The run's `invoke_agent` span, a child of the current (request) span; None when off."""
    if not ENABLED:
        return None
    from opentelemetry import trace

    return _tracer.start_span("invoke_agent", kind=trace.SpanKind.INTERNAL, attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": meter.provider,
        "gen_ai.request.model": meter.model, "gen_ai.conversation.id": meter.thread_id,
        "tambo.run.id": meter.run_id, "tambo.project.id": meter.project_id})


def run_context_enter(meter) -> None:
    """Makes the run's span current in the task producing its events (its own task: runs/views.py),
    so the database calls and model calls of the run nest under it."""
    if meter is None or meter.span is None:
        return
    from opentelemetry import context, trace

    context.attach(trace.set_span_in_context(meter.span))


def run_span_end(meter, *, outcome: str, error_code: str | None, tokens: dict[str, int]) -> str | None:
    """Ends the run's span; returns the trace id (for the run's end log line)."""
    span = meter.span
    if span is None:
        return None
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("tambo.run.outcome", outcome)
    span.set_attribute("gen_ai.usage.input_tokens", tokens["input"])
    span.set_attribute("gen_ai.usage.output_tokens", tokens["output"])
    if error_code:
        span.set_attribute("error.type", error_code)
        span.set_status(Status(StatusCode.ERROR, error_code))
    span.end()
    meter.span = None
    return format(span.get_span_context().trace_id, "032x")


def model_span(meter, model: str | None, request=None, operation: str = "chat"):
    """A context manager around one model call (the ModelRequest `request`), yielding the span (or None
    when tracing is off). `operation` is `chat`, or `invoke_agent` for an external agent's run
    (docs/models.md#agents), as the GenAI conventions name them."""
    if meter is None or meter.span is None:
        return _NO_SPAN
    return _model_span(meter, model or meter.model, request, operation)


@contextlib.contextmanager
def _model_span(meter, model: str, request, operation: str):
    from opentelemetry import trace

    attributes = {"gen_ai.operation.name": operation, "gen_ai.provider.name": meter.provider,
                  "gen_ai.request.model": model}
    if operation == "invoke_agent":
        attributes["gen_ai.agent.name"] = model
    span = _tracer.start_span(f"{operation} {model}", context=trace.set_span_in_context(meter.span),
                              kind=trace.SpanKind.CLIENT, attributes=attributes)
    if CAPTURE_CONTENT and request is not None:
        from telemetry import content

        span.set_attribute("gen_ai.input.messages", content.input_messages(request.messages))
    try:
        yield span
    except BaseException as exc:
        span.set_attribute("error.type", getattr(exc, "code", None) or type(exc).__name__)
        raise
    finally:
        span.end()


def model_span_result(span, *, finish_reason: str | None, usage: dict | None, output=None) -> None:
    """The answer's facts on the model's span; with content capture on, also `output` (a runs.step.Step:
    its `text` and `calls`, each with `id`, `name`, `arguments`) as `gen_ai.output.messages`."""
    if span is None:
        return
    from telemetry.usage import tokens_of

    if CAPTURE_CONTENT and output is not None:
        from telemetry import content

        span.set_attribute("gen_ai.output.messages", content.output_messages(
            text=output.text, calls=[(c.id, c.name, c.arguments) for c in output.calls.values()],
            finish_reason=finish_reason))

    tokens = tokens_of(usage)
    # The providers report no response model apart from the one asked for: the request's is the answer's.
    span.set_attribute("gen_ai.response.model", span.attributes.get("gen_ai.request.model", ""))
    span.set_attribute("gen_ai.response.finish_reasons", [finish_reason or "unknown"])
    span.set_attribute("gen_ai.usage.input_tokens", tokens["input"])
    span.set_attribute("gen_ai.usage.output_tokens", tokens["output"])


def tool_span(meter, name: str, call_id: str, kind: str | None):
    if meter is None or meter.span is None:
        return _NO_SPAN
    return _tool_span(meter, name, call_id, kind)


@contextlib.contextmanager
def _tool_span(meter, name: str, call_id: str, kind: str | None):
    from opentelemetry import trace

    span = _tracer.start_span(f"execute_tool {name}", context=trace.set_span_in_context(meter.span),
                              kind=trace.SpanKind.INTERNAL, attributes={
                                  "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                  "gen_ai.tool.call.id": call_id, "gen_ai.tool.type": kind or "unknown"})
    try:
        yield span
    finally:
        span.end()


# --- database statements -------------------------------------------------------------------------

def _install_statement_spans(sender, connection, **kwargs) -> None:
    if _statement_span not in connection.execute_wrappers:
        connection.execute_wrappers.append(_statement_span)


def _statement_span(execute, sql, params, many, context):
    from opentelemetry import trace

    operation = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else "SQL"
    # The SQL text has placeholders only: the values (message text among them) are never recorded.
    with _tracer.start_as_current_span(operation, kind=trace.SpanKind.CLIENT, attributes={
            "db.system.name": context["connection"].vendor, "db.operation.name": operation,
            "db.query.text": sql[:2000]}):
        return execute(sql, params, many, context)
