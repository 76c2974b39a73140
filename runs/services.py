"""Starting runs and recording what they produce. Synchronous; the async loop calls them through
db_call (core/db.py), a handful of times per run (never per token)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from clientsdk import wire
from core.ids import new_id
from core.problems import Problem
from projects.auth import Principal
# StartedRun lives with the one start; kept importable from here, where the loop and views look for it.
from runs.begin import NewThread, RunRequest, StartedRun, TurnRead, run_begin  # noqa: F401
from runs.lock import lock_fence, lock_release, lock_request_cancel, lock_taken_over
from runs.models import Run
from runs.turns import NewMessage, Turn, turn_results_check
from telemetry.calls import run_charge
from telemetry.runs import RunEnd
from threads import selectors
from threads import services as thread_services
from threads.models import Message, Thread
from tools.selectors import ProjectTools


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


@dataclass
class _V1Request(RunRequest):
    """A /v1 run request (new thread, existing thread, tool-result continuation) as the one start's input."""

    body: wire.CreateRunBody | None = None

    def read_turn(self, thread: Thread) -> TurnRead:
        body = self.body
        _check_previous_run(thread, body)
        results = _tool_results(body)
        turn_results_check(thread, results)
        return TurnRead(turn=_turn(body, results), body=body, previous_run_id=body.previous_run_id)


def run_start(*, principal: Principal, body: wire.CreateRunBody, thread_id: str | None,
              tools: ProjectTools | None = None) -> StartedRun:
    """Starts a /v1 run (docs/protocol.md#starting-a-run): the request read into the one start's
    input and started by runs/begin.py `run_begin`, which applies the project's rules, takes the lock
    and stores the new message in one transaction (on a new thread, `thread_id` None, the thread is
    created in it, holding the lock from its INSERT). `tools`, the project's server tools when the
    caller read them already (runs/start.py), spare a new thread the statement that reads them.
    Raises Problem for every rejection."""
    spec = getattr(body, "thread", None) if thread_id is None else None
    new_thread = None
    if thread_id is None:
        spec = spec or wire.NewThreadSpec()
        metadata = spec.metadata if spec.metadata is not None else getattr(body, "thread_metadata", None)
        new_thread = NewThread(metadata=metadata, initial_messages=tuple(spec.initial_messages or ()))
    user_key = principal.user_key_checked((spec.user_key if spec is not None else None) or body.user_key)
    return run_begin(_V1Request(
        principal=principal, user_key=user_key, model=body.model, max_tokens=body.max_tokens,
        request_params=run_request_params(body), resume=run_resume_fields(body), thread_id=thread_id,
        new_thread=new_thread, content=body.message.wire()["content"], tools=tools, body=body))


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
    """Releases the lock and records the run's end in one transaction: `last_step` stored first, held
    lock or not (as step_persist would), then the release, then (only when it released) the run's
    usage row (no statement of its own per step); its metrics, log line and span follow (telemetry/runs.py).
    A run another process took over stores nothing: that process redoes the step."""
    _usage_record(thread, run)
    if getattr(run, "state_reported", False):
        fields["thread_fields"] = {**fields["thread_fields"], "agui_state": thread.agui_state}
    end = RunEnd(run=run, outcome=run_status, error_code=fields.get("error_code"))
    with transaction.atomic():
        if last_step is not None:
            step_store(thread=thread, run=run, **last_step)
        released = lock_release(thread_id=thread.id, run_id=run.id, run_status=run_status,
                                run_fields=_run_fields(run), **fields)
        if released:
            end.record()
        elif last_step is not None and lock_taken_over(run_id=run.id):
            transaction.set_rollback(True)
    end.observe(released=released)
    return released


def _usage_record(thread: Thread, run: Run) -> None:
    # With the run's end, never per step: the tokens spent whatever way the run ended (a lost lock too).
    run_charge(project=thread.project, user_key=thread.user_key, usage=run.usage,
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
