"""Starting runs and recording what they produce. Synchronous; the async loop calls them through
db_call (core/db.py), a handful of times per run (never per token)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from clientsdk import wire
from core.ids import new_id
from core.problems import Problem
from core.statements import Insert
from projects import limits
from projects.auth import Principal
from projects.models_config import model_chain_for
from providers.chain import ModelChain
from projects.config import output_cap, project_settings
from providers.estimate import message_tokens
from runs.context_budget import check_new_message, run_budget
from runs.lock import lock_fence, lock_release, lock_request_cancel, lock_take, lock_take_created
from runs.models import Run
from runs.start_history import history_after_lock
from runs.tool_counts import TurnToolCounts, turn_limit
from runs.turns import NewMessage, Turn, turn_results_check, turn_store
from telemetry.runs import RunEnd, run_meter_start
from threads import selectors
from threads import services as thread_services
from threads.models import Message, RunStatus, Thread
from threads.statements import ScopedThreadLock
from tools.selectors import ProjectTools, project_tools, project_tools_of
from tools.statements import tool_columns

_RUN_INSERT = Insert(Run)
_THREAD_AND_TOOLS = ScopedThreadLock(tool_columns, ("tools_enabled", "tools_mcp"))


@dataclass
class StartedRun:
    """Everything the advance loop needs, read while the lock was taken."""

    thread: Thread
    run: Run
    body: wire.CreateRunBody
    history: list[Message]
    created_thread: bool = False
    tools: ProjectTools = field(default_factory=ProjectTools)  # the project's server tools, read with the lock
    budget: limits.Budget | None = None  # the tokens the run may still spend (projects/limits.py)
    tool_counts: TurnToolCounts = field(init=False)  # from the calls made earlier in this user turn
    models: ModelChain | None = None  # the project's models for this run (projects/models_config.py)
    context_budget: int | None = None  # input tokens the model may be sent (runs/context_budget.py)
    resumed: Any = None  # a run taken over from another process: how it goes on (runs/recovery/takeover.py)

    def __post_init__(self) -> None:
        limit = turn_limit(self.thread.project.max_tool_calls_per_turn, settings.MAX_TOOL_CALLS_PER_TURN)
        self.tool_counts = TurnToolCounts.of_turn(self.history, turn_limit=limit,
                                                  max_identical=settings.MAX_IDENTICAL_TOOL_CALLS)
        # Every entry point (/v1, AG-UI) builds one of these once the lock is taken: the run starts here.
        run_meter_start(run=self.run, thread=self.thread, project=self.thread.project, user_key=self.thread.user_key,
                        models=self.models)


def _tool_results(body: wire.CreateRunBody) -> dict[str, wire.InToolResultBlock]:
    # Duplicates by toolUseId collapse, the last one wins (docs/protocol.md#starting-a-run, check 4).
    return {b.tool_use_id: b for b in body.message.content if isinstance(b, wire.InToolResultBlock)}


def _check_previous_run(thread: Thread, body: wire.CreateRunBody) -> None:
    if thread.last_completed_run_id and body.previous_run_id != thread.last_completed_run_id:
        raise Problem(400, "INVALID_PREVIOUS_RUN",
                      "previousRunId must be the id of the thread's last completed run.",
                      lastCompletedRunId=thread.last_completed_run_id)
    # `is not None`: an empty previousRunId names no run either, and stored it would break the foreign key.
    if not thread.last_completed_run_id and body.previous_run_id is not None:
        raise Problem(400, "INVALID_PREVIOUS_RUN", "The thread has no completed run to continue.")


def run_start(*, principal: Principal, body: wire.CreateRunBody, thread_id: str | None,
              tools: ProjectTools | None = None) -> StartedRun:
    """Checks a run request (docs/protocol.md#starting-a-run, checks 2-5), takes the lock and stores the new message.

    One transaction: the thread is read once, locked (`SELECT … FOR UPDATE`, scoped to the
    requester) together with the project's tools; the Run row, the tool results (as tool
    messages), the abandoned calls' error results and the user's message are written in it, with
    the pending ids cleared there too. On a new thread (`thread_id` None) the thread is created in
    the same transaction, so a rejected request leaves nothing behind. The lock is taken straight
    into STREAMING: the loop starts the model at once. `tools`, the project's server tools when the
    caller read them already (runs/start.py), spare a new thread the statement that reads them.
    Raises Problem for every rejection.
    """
    # Before the transaction: a model the project does not offer, or a message larger than its
    # context budget, is refused with nothing stored.
    models, context_budget = run_model_rules(principal, requested=body.model, max_tokens=body.max_tokens)
    run_message_check(principal, body, context_budget)
    # Limits before the lock (429 RATE_LIMITED / BUDGET_EXCEEDED), in one statement of their own.
    budget = limits.call_admit(project=principal.project, user_key=_run_user(principal, body, thread_id),
                               reserve=run_reservation(principal, body.message.wire()["content"], context_budget,
                                                       body.max_tokens))
    run = Run(previous_run_id=body.previous_run_id, model=body.model, request_params=run_request_params(body),
              status=Run.Status.STREAMING, started_at=timezone.now(), resume=run_resume_fields(body))
    run_reserved_note(run, budget)
    with transaction.atomic():
        if thread_id is None:
            thread, history = _start_new_thread(principal, body, run)
            tools = tools if tools is not None else project_tools_of(principal.project)
        else:
            thread = _start_on_thread(principal, body, run, thread_id)
            tools = project_tools(thread)
            history = None
    # The history (images and all) is read after the commit, not in the lock's transaction: the run
    # holds the lock now, so no other run writes the thread's messages meanwhile.
    if history is None:
        history = history_after_lock(thread=thread, run=run, budget=context_budget)
    thread.project = principal.project  # the loop reads it from async code: no lazy loads there
    started = StartedRun(thread=thread, run=run, body=body, history=history, created_thread=thread_id is None,
                         tools=tools, budget=budget, models=models, context_budget=context_budget)
    return started


def run_model_rules(principal: Principal, *, requested: str | None,
                    max_tokens: int | None) -> tuple[ModelChain, int | None]:
    """The project's model rules for a run of either entrance (/v1, AG-UI): the models it calls (400
    MODEL_NOT_ALLOWED for one the project does not offer) and its context budget, the input tokens
    the model may be sent (runs/context_budget.py; None: no budget). Reads no statement."""
    return model_chain_for(principal.project, requested=requested), run_budget(principal.project, max_tokens)


def run_reservation(principal: Principal, content: list, context_budget: int | None, max_tokens: int | None) -> int:
    """A run's worst case, reserved against the token budgets at admission (projects/limits.py
    `call_admit`): its input (the context budget the project sets, else the system prompt and the new
    message, estimated) plus its output cap (the run's `maxTokens` or the project's `maxOutputTokens`,
    else BUDGET_RESERVED_OUTPUT_TOKENS). The server's default budget (DEFAULT_MAX_INPUT_TOKENS) is not
    reserved whole: on a project with a small token budget it would refuse every run but the first."""
    config = project_settings(principal.project)
    if not (config.limits.tokens_per_day or config.limits.tokens_per_day_per_user):
        return 0
    cap = output_cap(config)
    output = (min(max_tokens, cap) if max_tokens and cap else max_tokens or cap) or settings.BUDGET_RESERVED_OUTPUT_TOKENS
    if context_budget is not None and config.max_input_tokens:
        return context_budget + output
    return (message_tokens({"content": principal.project.system_prompt}) + message_tokens({"content": content})
            + output)


def run_reserved_note(run: Run, budget: limits.Budget | None) -> None:
    """Keeps the admission's reservation on the run (in memory, as its usage), for its end to reconcile."""
    run.tokens_reserved = budget.reserved if budget is not None else 0


def run_message_check(principal: Principal, body: wire.CreateRunBody, context_budget: int | None) -> None:
    """400 CONTEXT_TOO_LARGE when the system prompt and the run's new message alone exceed the
    context budget: refused before anything is stored or any model called (both entrances)."""
    check_new_message(system_prompt=principal.project.system_prompt, content=body.message.wire()["content"],
                      budget=context_budget)


def _start_new_thread(principal: Principal, body: wire.CreateRunBody, run: Run) -> tuple[Thread, list[Message] | None]:
    """Creates the thread, locked for `run`, and stores the input; returns it with its history, or
    None when the history must be read (after the transaction). Caller holds the transaction."""
    thread = _new_thread(principal, body, run)
    _check_previous_run(thread, body)
    turn_results_check(thread, _tool_results(body))
    run.thread = thread
    _RUN_INSERT.save(run)
    stored = turn_store(thread=thread, run=run, turn=_turn(body, {}))
    spec = getattr(body, "thread", None)
    # Without initial messages the history is exactly what was just stored: no need to read it back.
    return thread, None if spec is not None and spec.initial_messages else stored


def _start_on_thread(principal: Principal, body: wire.CreateRunBody, run: Run, thread_id: str) -> Thread:
    """Locks the requester's thread for `run` and stores the input. Caller holds the transaction."""
    user_key = principal.user_key_checked(body.user_key)
    results = _tool_results(body)

    def check(locked: Thread) -> None:
        # Before the lock's own check, so a bad request is told so even while a run streams.
        _check_previous_run(locked, body)
        turn_results_check(locked, results)

    def in_lock(locked: Thread) -> None:
        run.thread = locked
        _RUN_INSERT.save(run)
        turn_store(thread=locked, run=run, turn=_turn(body, results))
        locked.pending_tool_call_ids = []
        locked.pending_inputs = None

    def read(locked_id: str) -> Thread:
        # The requester's thread with the project's tools, in one statement written once.
        return _THREAD_AND_TOOLS.lock(thread_id=locked_id, project_id=principal.project.pk, user_key=user_key)

    return lock_take(thread_id=thread_id, run_id=run.id, check=check, in_lock=in_lock, read=read,
                     status=RunStatus.STREAMING)


def _run_user(principal: Principal, body: wire.CreateRunBody, thread_id: str | None) -> str:
    spec = getattr(body, "thread", None) if thread_id is None else None
    return principal.user_key_checked((spec.user_key if spec is not None else None) or body.user_key)


def _new_thread(principal: Principal, body: wire.CreateRunBody, run: Run) -> Thread:
    """The new thread, inserted holding the lock for `run`. Caller holds the transaction."""
    spec = getattr(body, "thread", None) or wire.NewThreadSpec()
    user_key = principal.user_key_checked(spec.user_key or body.user_key)
    metadata = spec.metadata if spec.metadata is not None else getattr(body, "thread_metadata", None)
    return thread_services.thread_create(
        project=principal.project, user_key=user_key, metadata=metadata, initial_messages=spec.initial_messages or (),
        before_insert=lambda thread: lock_take_created(thread=thread, run_id=run.id, status=RunStatus.STREAMING))


def run_request_params(body: wire.CreateRunBody) -> dict[str, Any]:
    """What the Run row records of the request (the AG-UI endpoint records the same)."""
    params = body.model_dump(by_alias=True, exclude_none=True, mode="json",
                             include={"tool_choice", "max_tokens", "temperature", "run_metadata"})
    params["toolNames"] = [t.name for t in body.tools or []]
    params["componentNames"] = [c.name for c in body.available_components or []]
    return params


# What a takeover needs of the request to go on with the run (runs/recovery/takeover.py): all but
# its message, which is in the thread by then.
RESUME_FIELDS = {"tools", "available_components", "tool_choice", "model", "max_tokens", "temperature", "user_key",
                 "on_disconnect"}


def run_resume_fields(body: wire.CreateRunBody) -> dict[str, Any]:
    return body.model_dump(by_alias=True, exclude_none=True, mode="json", include=RESUME_FIELDS)


def _turn(body: wire.CreateRunBody, results: dict[str, wire.InToolResultBlock]) -> Turn:
    """The request's message as the turn it adds (runs/turns.py): its tool results, and the rest of
    its content as one user message (none when it only answers tool calls)."""
    other = [b.wire() for b in body.message.content if not isinstance(b, wire.InToolResultBlock)]
    messages = [NewMessage(Message.Role.USER, other, metadata=body.message.metadata)] if other or not results else []
    return Turn(messages=messages, results={call_id: NewMessage(Message.Role.TOOL, [block.wire()])
                                            for call_id, block in results.items()},
                context=body.message.additional_context, retry_repeats_failed_turn=True)


def step_persist(*, thread: Thread, run: Run, message_id: str, content: list[dict], cancelled: bool,
                 tool_messages: list[tuple[str, dict]] = (), reasoning: list[str] | None = None,
                 reasoning_duration_ms: int | None = None, reasoning_blocks: list[dict] | None = None) -> None:
    """Stores one model step: the assistant message (once, when it ended, with the reasoning before
    it and the provider's signed reasoning blocks) and its tool results. Raises runs.lock.LeaseLost,
    storing nothing, when another process took the run over (docs/operations.md#takeover)."""
    with transaction.atomic():
        lock_fence(run_id=run.id)
        step_store(thread=thread, run=run, message_id=message_id, content=content, cancelled=cancelled,
                    tool_messages=tool_messages, reasoning=reasoning, reasoning_duration_ms=reasoning_duration_ms,
                    reasoning_blocks=reasoning_blocks)


def step_store(*, thread: Thread, run: Run, message_id: str, content: list[dict], cancelled: bool,
                tool_messages: list[tuple[str, dict]] = (), reasoning: list[str] | None = None,
                reasoning_duration_ms: int | None = None, reasoning_blocks: list[dict] | None = None) -> None:
    """What step_persist stores, in the caller's transaction (the release's, for a run's last step)."""
    if content or cancelled or reasoning:
        thread_services.message_create(thread=thread, role=Message.Role.ASSISTANT, content=content,
                                       run_id=run.id, is_cancelled=cancelled, message_id=message_id,
                                       reasoning=reasoning, reasoning_duration_ms=reasoning_duration_ms,
                                       reasoning_blocks=reasoning_blocks or None)
    for tool_call_id, block in tool_messages:
        thread_services.message_create(thread=thread, role=Message.Role.TOOL, content=[block], run_id=run.id,
                                       tool_call_id=tool_call_id, parent_message_id=message_id)


def usage_add(total: dict[str, int] | None, step: dict[str, Any]) -> dict[str, int]:
    """Sums one step's token counts into the run's (only the integer counts; the rest is the provider's)."""
    result = dict(total or {})
    for key, value in step.items():
        if isinstance(value, int) and not isinstance(value, bool):
            result[key] = result.get(key, 0) + value
    return result


def message_mark_cancelled(*, message_id: str) -> None:
    Message.objects.filter(id=message_id).update(is_cancelled=True)


def run_pause(*, thread: Thread, run: Run, pending_ids: list[str], pending_inputs: dict | None = None) -> bool:
    """`pending_inputs`: the pending ids that are MCP tools' requests for input (runs/mcp_inputs.py)."""
    return _release(thread=thread, run=run, run_status=Run.Status.AWAITING_INPUT,
                    thread_fields={"pending_tool_call_ids": pending_ids, "pending_inputs": pending_inputs or None,
                                   "last_completed_run_id": run.id, "last_run_cancelled": None,
                                   "last_run_error": None})


def run_complete(*, thread: Thread, run: Run, last_step: dict[str, Any] | None = None) -> bool:
    """Ends the run as completed; `last_step`, step_persist's arguments for the answer that ends it,
    stores that step in the same transaction: the end of a run is one database call."""
    return _release(thread=thread, run=run, run_status=Run.Status.COMPLETED, last_step=last_step,
                    thread_fields={"pending_tool_call_ids": [], "pending_inputs": None, "last_completed_run_id": run.id,
                                   "last_run_cancelled": None, "last_run_error": None})


def run_cancel(*, thread: Thread, run: Run) -> bool:
    # A cancelled run still counts as the last completed one, so the next message can follow it.
    return _release(thread=thread, run=run, run_status=Run.Status.CANCELLED,
                    thread_fields={"pending_tool_call_ids": [], "pending_inputs": None, "last_completed_run_id": run.id,
                                   "last_run_cancelled": True, "last_run_error": None},
                    error_code="CANCELLED", error_message="The run was cancelled.")


def run_fail(*, thread: Thread, run: Run, code: str, message: str) -> bool:
    return _release(thread=thread, run=run, run_status=Run.Status.FAILED,
                    thread_fields={"pending_tool_call_ids": [], "pending_inputs": None, "last_completed_run_id": run.id,
                                   "last_run_cancelled": None,
                                   "last_run_error": {"code": code, "message": message}},
                    error_code=code, error_message=message)


def _release(*, thread: Thread, run: Run, run_status: str, last_step: dict[str, Any] | None = None,
             **fields: Any) -> bool:
    """Releases the lock and records the run's end; its usage row is written in the same transaction
    (no statement of its own per step) and its metrics, log line and span follow (telemetry/runs.py).
    `last_step` is stored first in that transaction, held lock or not (as step_persist would)."""
    _usage_record(thread, run)
    if getattr(run, "state_reported", False):
        fields["thread_fields"] = {**fields["thread_fields"], "agui_state": thread.agui_state}
    end = RunEnd(run=run, outcome=run_status, error_code=fields.get("error_code"))
    before = (lambda: step_store(thread=thread, run=run, **last_step)) if last_step is not None else None
    released = lock_release(thread_id=thread.id, run_id=run.id, run_status=run_status, run_fields=_run_fields(run),
                            in_lock=end.record, before=before, **fields)
    end.observe(released=released)
    return released


def _usage_record(thread: Thread, run: Run) -> None:
    # With the run's end, never per step: the tokens spent whatever way the run ended (a lost lock too).
    limits.call_record(project=thread.project, user_key=thread.user_key, usage=run.usage,
                       reserved=getattr(run, "tokens_reserved", 0))


def _run_fields(run: Run) -> dict[str, Any]:
    # The token usage summed over the run's steps, and which model answered, are stored once, with
    # how the run ended.
    fields: dict[str, Any] = {"usage": run.usage} if run.usage is not None else {}
    if run.answered_model:
        fields["answered_model"] = run.answered_model
    if run.model_fallbacks:
        fields["model_fallbacks"] = run.model_fallbacks
    return fields


def run_note_state(*, thread: Thread, run: Run, state: Any) -> None:
    """Notes the state an agent reported (in memory: the run's next call of the agent is sent it, and
    the run's end stores it as the thread's, however the run ends: `_release`)."""
    thread.agui_state = state
    run.state_reported = True


def run_note_model(*, run: Run, models: Any) -> None:
    """Notes on `run` (in memory; stored by the release) which of its models answered and the
    fallbacks taken, as a ModelChain reports them after a step."""
    answered = getattr(models, "answered", None)
    if answered is not None:
        run.answered_model = answered.label
    run.model_fallbacks = list(getattr(models, "fallbacks", None) or [])


def run_cancel_request(*, principal: Principal, thread_id: str, run_id: str, user_key_raw: object) -> None:
    """Flags the thread's active run `run_id` for cancellation; 404 RUN_NOT_FOUND if it is not the active one."""
    user_key = principal.user_key_checked(user_key_raw)
    selectors.thread_get(project=principal.project, user_key=user_key, thread_id=thread_id)
    if not lock_request_cancel(thread_id=thread_id, run_id=run_id):
        raise Problem(404, "RUN_NOT_FOUND", f"Run {run_id} is not the thread's active run.")


def message_id_new() -> str:
    return new_id("msg")
