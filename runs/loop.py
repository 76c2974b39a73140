"""The advance loop: an async generator of AG-UI events for one run. It knows nothing of HTTP.

Each iteration is one model step: stream the model's output as events, store the assistant message
when it ends, run server-side tools and components inline and go round again, or pause on client
tools (pending ids stored and the lock released *before* `tambo.run.awaiting_input`), or finish.
Database work goes through db_call (core/db.py) a few times per step, never per token, and no
transaction is open while the model or a tool runs.
"""
from __future__ import annotations

import logging
from typing import AsyncIterator

from ag_ui.core import (BaseEvent, CustomEvent, RunErrorEvent, RunFinishedEvent, RunFinishedSuccessOutcome,
                        RunStartedEvent, StateSnapshotEvent, ToolCallResultEvent)
from django.conf import settings

from clientsdk import wire
from core.db import db_call
from core.problems import is_database_unavailable
from projects.config import project_settings
from projects.limits import model_calls_limit
from providers.base import ModelError, ModelRequest, Provider, RunRef, StepEnd
from providers.tool_names import ToolAliases
from runs import context_budget, services
from runs.control import HANDOVER_REASON, SHUTDOWN_REASON, RunCancelled, RunControl
from runs.history import build_model_messages, component_result_text, result_text
from runs.lock import LEASE_EXPIRED_CODE
from runs.mcp_inputs import InputAsk
from runs.memories import memories_extract_later, memories_inject, memory_tools_add
from runs.recovery import settle
from runs.recovery.leases import checkpoint_write
from runs.services import StartedRun
from runs.start_history import history_after_lock
from runs.step import Call, Step
from runs.tool_counts import TurnToolCounts
from runs.toolbox import Toolbox, ToolResult, error_result, mcp_grants, mcp_tools_load, toolbox_build
from telemetry import tracing
from telemetry.calls import CallScope, model_stream, step_admit
from telemetry.models import Usage
from telemetry.runs import meter_of

log = logging.getLogger(__name__)

STEP_LIMIT_CODE = "STEP_LIMIT_EXCEEDED"
UNAVAILABLE_CODE = "SERVICE_UNAVAILABLE"  # the database went away during the run (retryable)
SHUTDOWN_CODE, SHUTDOWN_MESSAGE = "SERVER_SHUTTING_DOWN", "The server is shutting down; run it again."


async def advance(started: StartedRun, control: RunControl, provider: Provider) -> AsyncIterator[BaseEvent]:
    """The run's events, from RUN_STARTED to exactly one RUN_FINISHED or RUN_ERROR.

    Whatever escapes the loop itself (typically the database failing while the loop records how the
    run ended, or a failure the consumer throws in at a yield: see runs/stream/guard.py) still ends the
    stream with RUN_ERROR, and the run is recorded as failed with the unsaved step stored and its
    lock released: at once if the database answers, else in the background (runs/recovery/settle.py).
    """
    ended = False
    inner = _advance(started, control, provider)
    try:
        async for event in inner:
            ended = ended or isinstance(event, (RunFinishedEvent, RunErrorEvent))
            yield event
    except Exception as exc:
        log.exception("Run %s failed while ending", started.run.id)
        if ended:
            return
        code, message = _failure_code(exc)
        was_cancelled = control.cancelled  # the failure came while storing a cancel
        control.cancel("failed")  # stops the model call or tool in flight at once
        try:
            await inner.aclose()
        except Exception:  # noqa: BLE001 - the run is being ended anyway
            log.warning("Run %s: closing the loop failed", started.run.id, exc_info=True)
        control.settle("failed")
        await settle.run_end(thread=started.thread, run=started.run, step=control.step, code=code, message=message,
                             cancelled=was_cancelled)
        yield RunErrorEvent(message=message, code=code, category="server_error", isRetryable=True)


def _failure_code(exc: BaseException) -> tuple[str, str]:
    if is_database_unavailable(exc):
        return UNAVAILABLE_CODE, "The service became unavailable during the run."
    return "INTERNAL_ERROR", "An internal error occurred."


async def _advance(started: StartedRun, control: RunControl, provider: Provider) -> AsyncIterator[BaseEvent]:
    thread, run = started.thread, started.run
    tracing.run_context_enter(meter_of(run))  # this task's own context (runs/views.py): the run's span
    # A shutting-down process hands the run over (docs/operations.md#takeover) when another may go on with it.
    control.can_hand_over = run.resume is not None and run.takeover_count < settings.RUN_TAKEOVER_LIMIT
    if started.resumed is None:  # a run taken over started already: its client saw RUN_STARTED
        yield RunStartedEvent(thread_id=thread.id, run_id=run.id)
    step: Step | None = None
    persisted: Step | None = None
    try:
        # run_start took the lock straight into STREAMING and read the project's tools with it.
        toolbox = await _toolbox(started)
        if toolbox.authorizations:
            async for event in _pause_for_authorization(started, control, toolbox.authorizations):
                yield event
            return
        retries = getattr(run, "input_retries", None)
        if retries:
            # MCP tool calls the user has just answered a request for input of: made again with the
            # answers before the model sees anything (runs/mcp_inputs.py).
            asks: list[InputAsk] = []
            async for event in _inputs_retry(started, toolbox, control, retries, asks):
                yield event
            if asks:
                async for event in _pause(started, control, [], asks):
                    yield event
                return
        messages = build_model_messages(thread.project.system_prompt, started.history,
                                        allow_override=project_settings(thread.project).allow_system_prompt_override)
        await memories_inject(started, messages, context_budget.label_of(provider))
        carried = None
        if started.resumed is not None:
            # Taken over (runs/recovery/takeover.py): the client is told, the last stored step's calls
            # whose results were not stored run again, and the step in flight is carried on.
            for event in started.resumed.preamble:
                yield event
            redo = started.resumed.redo(toolbox, messages)
            if redo is not None:
                redo_asks: list[InputAsk] = []
                async for event in _resolve_calls(started, redo, toolbox, control, messages, [], redo_asks):
                    yield event
                if redo_asks:
                    async for event in _pause(started, control, [], redo_asks):
                        yield event
                    return
            carried = started.resumed.carried
        control.sealed = thread.sealed
        step_limit = model_calls_limit(thread.project, settings.MAX_MODEL_CALLS_PER_RUN)
        label = context_budget.label_of(provider)
        calls = 0
        # A step is a model call; a server or MCP call that timed out counts as one more (toolbox.timeouts).
        while calls + toolbox.timeouts < step_limit:
            first, calls = calls == 0, calls + 1
            persisted = None  # a cancel from here on leaves the previous, finished step alone
            control.check()
            step = control.step = Step(message_id=services.message_id_new(), toolbox=toolbox)
            prefill: list[dict] = []
            if carried is not None:  # the step in flight before a takeover, as its client saw it (runs/carry.py)
                step.carry(carried)
                prefill, carried = carried.prefill(), None
            sent = context_budget.fit(messages, started.context_budget, label)
            # Each model call is admitted (the first by run_begin a moment ago; a taken-over run's first
            # here was not): its worst case reserved against the budgets as they stand now, across
            # processes (telemetry/calls.py, the door of every model call). The run's end reconciles
            # the whole reservation with what it used.
            reserved = getattr(run, "tokens_reserved", 0)
            run.tokens_reserved = reserved + await step_admit(
                _scope(started), budget=started.budget, usage=run.usage, reserved=reserved,
                messages=[*sent, *prefill], max_tokens=started.body.max_tokens, first=first and started.resumed is None)
            async for event in _model_step(step, sent, started, provider, control, prefill):
                yield event
            stored = dict(message_id=step.message_id, content=step.content(), cancelled=False,
                          reasoning=step.reasoning.texts(), reasoning_duration_ms=step.reasoning.duration_ms,
                          reasoning_blocks=step.reasoning_blocks)
            if not step.calls:
                # The answer: stored with the run's end, one transaction and one database call.
                released = await db_call(services.run_complete, thread=thread, run=run, last_step=stored)
                persisted, step = step, None
                control.step = None
                control.settle("completed")
                if released:
                    memories_extract_later(started)  # in the background: the run ends now
                yield RunFinishedEvent(thread_id=thread.id, run_id=run.id) if released else _lost_lock()
                return
            await db_call(services.step_persist, thread=thread, run=run, **stored)
            persisted, step = step, None
            control.step = None  # stored: nothing left to checkpoint or to store after a crash
            messages.append(persisted.model_message())
            pending: list[Call] = []
            asks = []
            async for event in _resolve_calls(started, persisted, toolbox, control, messages, pending, asks):
                yield event
            if pending or asks:
                async for event in _pause(started, control, pending, asks):
                    yield event
                return
        raise ModelError(STEP_LIMIT_CODE, f"The run reached its limit of {step_limit} model calls without an "
                                          "answer (the project's limits.modelCallsPerRun).", retryable=False)
    except RunCancelled as exc:
        if exc.reason == HANDOVER_REASON:
            # Another process goes on with the run, redoing this step: only its text is kept, in case
            # that process cannot take it over after all (runs/recovery/takeover.py).
            if step is not None and step.text:
                await db_call(checkpoint_write, checkpoints={run.id: (step.message_id, step.text)})
            control.settle("handed over")
            return
        # A process shutting down fails its runs retryably: the client may run them again at once.
        ending = (_end_failed(started, control, step, SHUTDOWN_CODE, SHUTDOWN_MESSAGE, "server_error", True)
                  if exc.reason == SHUTDOWN_REASON else _end_cancelled(started, control, step, persisted))
        async for event in ending:
            yield event
    except ModelError as exc:
        async for event in _end_failed(started, control, step, exc.code, exc.message, exc.category, exc.retryable):
            yield event
    except Exception as exc:
        log.exception("Run %s failed", run.id)
        code, message = _failure_code(exc)
        async for event in _end_failed(started, control, step, code, message, "server_error", True):
            yield event


async def _resolve_calls(started: StartedRun, persisted: Step, toolbox: Toolbox, control: RunControl,
                         messages: list[dict], pending: list[Call], asks: list[InputAsk]) -> AsyncIterator[BaseEvent]:
    """Answers the step's calls that the server answers (server tools, components, refusals),
    yielding TOOL_CALL_RESULT for each stored result; client calls are appended to `pending`, and MCP
    calls whose tool asked for the user's input to `asks` (runs/mcp_inputs.py).

    The results are stored once the calls are done, and also when a later tool of the step is
    cancelled or fails: a result the client saw is never lost.
    """
    results: list[tuple[str, dict]] = []
    try:
        for call in persisted.calls.values():
            outcome = await _resolve(call, toolbox, started.tool_counts, control, meter_of(started.run))
            if outcome is None:
                pending.append(call)
                _count_call(started, call, None)
                continue
            if isinstance(outcome, InputAsk):
                outcome.message_id = persisted.message_id
                asks.append(outcome)
                continue
            block, model_text = outcome
            _count_call(started, call, block)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": model_text})
            if block is not None:
                results.append((call.id, block))
                yield ToolCallResultEvent(message_id=persisted.message_id, tool_call_id=call.id,
                                          content=model_text, role="tool")
    finally:
        if results:
            await db_call(services.step_persist, thread=started.thread, run=started.run,
                          message_id=persisted.message_id, content=[], cancelled=False, tool_messages=results)


def _count_call(started: StartedRun, call: Call, block: dict | None) -> None:
    meter = meter_of(started.run)
    if meter is not None and call.kind != "component":
        meter.tool_call(call.kind, bool(block and block.get("isError")))


async def _toolbox(started: StartedRun) -> Toolbox:
    body = started.body
    toolbox = toolbox_build(client_tools=body.tools or [], components=body.available_components or [],
                            enabled=started.tools.enabled,
                            result_max_chars=project_settings(started.thread.project).tool_result_max_chars)
    configs, toolbox.authorizations = await mcp_grants(started.tools.mcp_configs, user_key=started.thread.user_key)
    toolbox.mcp_tools = await mcp_tools_load(configs)
    memory_tools_add(started, toolbox)
    return toolbox


async def _model_step(step: Step, sent: list[dict], started: StartedRun, provider: Provider,
                      control: RunControl, prefill: list[dict]) -> AsyncIterator[BaseEvent]:
    """One model call sending `sent` (the run's messages fitted to its context budget, admitted with
    them); `prefill` ends its request with the text to continue (a carried step)."""
    body = started.body
    tool_choice = body.tool_choice
    label = context_budget.label_of(provider)
    request = ModelRequest(
        messages=[*sent, *prefill], tools=step.toolbox.model_tools(),
        tool_choice=tool_choice if isinstance(tool_choice, str) or tool_choice is None else {"name": tool_choice.name},
        model=body.model, max_tokens=body.max_tokens, temperature=body.temperature,
        run=RunRef(thread_id=started.thread.id, run_id=started.run.id, state=started.thread.agui_state),
    )
    # Client tool names the providers refuse go as aliases; the events keep the client's names.
    aliases = ToolAliases([tool.name for tool in request.tools])
    meter = meter_of(started.run)
    # Through the door (telemetry/calls.py): metered, its usage summed on the run and recorded with its end.
    call = model_stream(provider, aliases.request(request), _scope(started))
    reported: StateSnapshotEvent | None = None
    try:
        # An agent's call is an `invoke_agent` span, a model's a `chat` span (telemetry/tracing.py).
        with tracing.model_span(meter, body.model, request, operation=getattr(provider, "operation", "chat")) as span:
            async for delta in control.stream(call):
                delta = aliases.delta(delta)
                if isinstance(delta, StepEnd):
                    step.finish_reason = delta.finish_reason
                    tracing.model_span_result(span, finish_reason=delta.finish_reason, usage=delta.usage,
                                              output=step)
                    if delta.state_reported:
                        # An agent's state: sent on its next call, stored with the run's end, and shown.
                        services.run_note_state(thread=started.thread, run=started.run, state=delta.state)
                        reported = StateSnapshotEvent(snapshot=delta.state)
                    if label and delta.usage and delta.usage.get("prompt_tokens"):
                        context_budget.calibrate(label, sent, delta.usage["prompt_tokens"])
                    continue
                if meter is not None and meter.first_output_at is None:
                    meter.mark_first_output()  # the time to first token: once per run, one test per delta after
                for event in step.on_delta(delta):
                    yield event
    finally:
        # Which model answered (and the fallbacks on the way) is stored with how the run ends.
        services.run_note_model(run=started.run, models=provider)
        # Kept on the run in memory; the run's end writes it and charges it: the vendor's usage, else the
        # estimate (cancelled, cut, a vendor that reports none), so leaving a run early is never free;
        # nothing for a call the vendor refused before reading it (providers/usage_estimate.py).
        used = call.usage
        if used is not None:
            started.run.usage = services.usage_add(started.run.usage, used)
    for event in step.finish():
        yield event
    if reported is not None:
        yield reported


def _scope(started: StartedRun) -> CallScope:
    thread = started.thread
    return CallScope(thread.project, Usage.Kind.RUN, user_key=thread.user_key, thread_id=thread.id)


async def _resolve(call: Call, toolbox: Toolbox, counts: TurnToolCounts, control: RunControl,
                   meter) -> tuple[dict | None, str] | InputAsk | None:
    """What a call leads to: None while a client must answer it, an InputAsk while the user must answer
    its MCP tool's request for input, else (stored block or None, text for the model)."""
    if call.kind == "component":
        return None, component_result_text(toolbox.components[call.name].name, call.component_id, {})
    arguments, invalid = call.parsed_arguments()
    if invalid:
        return _stored(call, error_result(invalid))
    if call.kind is None:
        return _stored(call, error_result(f"There is no tool named {call.name}; use one of the tools offered."))
    refusal = counts.refuse(call.name, arguments, toolbox.max_calls(call.name))
    if refusal:
        return _stored(call, error_result(refusal))
    if call.kind == "client":
        return None
    with tracing.tool_span(meter, call.name, call.id, call.kind):
        result = await control.call(toolbox.execute(call.name, arguments))
    if result.input_request is not None:
        return InputAsk.new(call_id=call.id, name=call.name, server=toolbox.mcp_server_of(call.name),
                            arguments=arguments, message_id="", request=result.input_request)
    return _stored(call, result)


async def _inputs_retry(started: StartedRun, toolbox: Toolbox, control: RunControl,
                        retries: list[tuple[str, dict]], asks: list[InputAsk]) -> AsyncIterator[BaseEvent]:
    """Makes the MCP calls the user answered a request for input of again, with every answer so far.
    A call that asks again is appended to `asks`; the others' results are stored (the model's own call
    ids), sent as TOOL_CALL_RESULT, and the run's history read again to hold them."""
    results: dict[str, list[tuple[str, dict]]] = {}
    try:
        for input_call_id, entry in retries:
            ask = InputAsk.of_stored(input_call_id, entry)
            if ask.name not in toolbox.mcp_tools:
                result = error_result(f"The MCP tool {ask.name} is not available any more.")
            else:
                with tracing.tool_span(meter_of(started.run), ask.name, ask.call_id, "mcp"):
                    result = await control.call(toolbox.execute(ask.name, ask.arguments, ask.answers))
            if result.input_request is not None:
                asks.append(ask.again(result.input_request))
                continue
            block, model_text = _stored(ask.call_id, result)
            results.setdefault(ask.message_id, []).append((ask.call_id, block))
            yield ToolCallResultEvent(message_id=ask.message_id, tool_call_id=ask.call_id, content=model_text,
                                      role="tool")
    finally:
        for message_id, tool_messages in results.items():
            await db_call(services.step_persist, thread=started.thread, run=started.run, message_id=message_id,
                          content=[], cancelled=False, tool_messages=tool_messages)
    if results:
        started.history = await db_call(history_after_lock, thread=started.thread, run=started.run,
                                        budget=started.context_budget)


def _stored(call: Call | str, result: ToolResult) -> tuple[dict, str]:
    call_id = call if isinstance(call, str) else call.id
    block = {"type": "tool_result", "toolUseId": call_id, "content": result.content}
    if result.is_error:
        block["isError"] = True
    return block, result_text(block)


def _lost_lock() -> RunErrorEvent:
    return RunErrorEvent(message="The run lost its lock on the thread and was abandoned.",
                         code=LEASE_EXPIRED_CODE, category="server_error", isRetryable=True)


async def _pause(started: StartedRun, control: RunControl, pending: list[Call],
                 asks: list[InputAsk] = ()) -> AsyncIterator[BaseEvent]:
    """Pauses on client calls and MCP tools' requests for input; each of those is a synthetic client
    call (`tambo_mcp_input`) streamed here, and listed in `inputRequests` too (runs/mcp_inputs.py)."""
    thread, run = started.thread, started.run
    ids = [call.id for call in pending] + [ask.input_call_id for ask in asks]
    for ask in asks:
        for event in ask.events():
            yield event
    # The lock is released before the client hears it may answer, so its continuation cannot race us.
    released = await db_call(services.run_pause, thread=thread, run=run, pending_ids=ids,
                             pending_inputs={ask.input_call_id: ask.stored() for ask in asks})
    control.settle("paused")
    if not released:
        # Another run took the lock over (this one stopped renewing it): nothing was recorded as
        # pending, so the client must not answer these calls.
        yield _lost_lock()
        return
    value: dict = {"pendingToolCalls": [
        {"toolCallId": c.id, "toolName": c.name, "arguments": c.arguments or "{}"} for c in pending]
        + [ask.pending_call() for ask in asks]}
    if asks:
        value["inputRequests"] = [ask.wire() for ask in asks]
    yield CustomEvent(name=wire.AWAITING_INPUT, value=value)
    yield RunFinishedEvent(thread_id=thread.id, run_id=run.id,
                           outcome=RunFinishedSuccessOutcome(pending_tool_call_ids=ids))


async def _pause_for_authorization(started: StartedRun, control: RunControl,
                                   needed: list[tuple[str, str]]) -> AsyncIterator[BaseEvent]:
    """Before the model is called: the user must authorise protected MCP servers first. The run pauses
    with nothing pending; the app opens each URL, and the thread's next run goes on with the grants
    (docs/protocol.md#the-event-stream)."""
    thread, run = started.thread, started.run
    released = await db_call(services.run_pause, thread=thread, run=run, pending_ids=[])
    control.settle("paused")
    if not released:
        yield _lost_lock()
        return
    yield CustomEvent(name=wire.MCP_AUTHORIZATION_REQUIRED, value={"servers": [
        {"serverName": name, "authorizationUrl": url} for name, url in needed]})
    yield RunFinishedEvent(thread_id=thread.id, run_id=run.id)


async def _save_partial(started: StartedRun, step: Step | None, cancelled: bool,
                        persisted: Step | None = None) -> None:
    if step is None:
        if not cancelled:
            return
        if persisted is not None:
            # Cancelled while its tools ran: the step's message is stored already; mark it.
            await db_call(services.message_mark_cancelled, message_id=persisted.message_id)
            return
        step_content: list[dict] = []
        message_id = services.message_id_new()
    else:
        step.cancel()
        step_content, message_id = step.content(), step.message_id
    reasoning = step.reasoning.texts() if step is not None else None
    if step_content or cancelled or reasoning:
        await db_call(services.step_persist, thread=started.thread, run=started.run, message_id=message_id,
                      content=step_content, cancelled=cancelled, reasoning=reasoning,
                      reasoning_duration_ms=step.reasoning.duration_ms if step is not None else None)


async def _end_cancelled(started: StartedRun, control: RunControl, step: Step | None,
                         persisted: Step | None) -> AsyncIterator[BaseEvent]:
    await _save_partial(started, step, cancelled=True, persisted=persisted)
    await db_call(services.run_cancel, thread=started.thread, run=started.run)
    control.settle("cancelled")
    yield RunErrorEvent(message="The run was cancelled.", code="CANCELLED", category="client_error",
                        isRetryable=False)


async def _end_failed(started: StartedRun, control: RunControl, step: Step | None, code: str, message: str,
                      category: str, retryable: bool) -> AsyncIterator[BaseEvent]:
    try:
        await _save_partial(started, step, cancelled=False)
    except Exception:  # noqa: BLE001 - the lock must be released even if storing the partial fails
        log.exception("Could not store the partial message of run %s", started.run.id)
    await db_call(services.run_fail, thread=started.thread, run=started.run, code=code, message=message)
    control.settle("failed")
    yield RunErrorEvent(message=message, code=code, category=category, isRetryable=retryable)
