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
from projects.auth import Principal
from runs.lock import lock_release, lock_request_cancel, lock_take, lock_take_created
from runs.models import Run
from runs.tool_counts import TurnToolCounts
from runs.turns import NewMessage, Turn, turn_results_check, turn_store
from threads import selectors
from threads import services as thread_services
from threads.models import Message, RunStatus, Thread
from tools.selectors import ProjectTools, project_tools, project_tools_of, tool_annotations

@dataclass
class StartedRun:
    """Everything the advance loop needs, read while the lock was taken."""

    thread: Thread
    run: Run
    body: wire.CreateRunBody
    history: list[Message]
    created_thread: bool = False
    tools: ProjectTools = field(default_factory=ProjectTools)  # the project's server tools, read with the lock
    tool_counts: TurnToolCounts = field(init=False)  # from the calls made earlier in this user turn

    def __post_init__(self) -> None:
        turn_limit = self.thread.project.max_tool_calls_per_turn or settings.MAX_TOOL_CALLS_PER_TURN
        self.tool_counts = TurnToolCounts.of_turn(self.history, turn_limit=turn_limit,
                                                  max_identical=settings.MAX_IDENTICAL_TOOL_CALLS)


def _tool_results(body: wire.CreateRunBody) -> dict[str, wire.InToolResultBlock]:
    # Duplicates by toolUseId collapse, the last one wins (spec section 3, check 4).
    return {b.tool_use_id: b for b in body.message.content if isinstance(b, wire.InToolResultBlock)}


def _check_previous_run(thread: Thread, body: wire.CreateRunBody) -> None:
    if thread.last_completed_run_id and body.previous_run_id != thread.last_completed_run_id:
        raise Problem(400, "INVALID_PREVIOUS_RUN",
                      "previousRunId must be the id of the thread's last completed run.",
                      lastCompletedRunId=thread.last_completed_run_id)
    # `is not None`: an empty previousRunId names no run either, and stored it would break the foreign key.
    if not thread.last_completed_run_id and body.previous_run_id is not None:
        raise Problem(400, "INVALID_PREVIOUS_RUN", "The thread has no completed run to continue.")


def run_start(*, principal: Principal, body: wire.CreateRunBody, thread_id: str | None) -> StartedRun:
    """Checks a run request (spec section 3, checks 2-5), takes the lock and stores the new message.

    One transaction: the thread is read once, locked (`SELECT … FOR UPDATE`, scoped to the
    requester) together with the project's tools; the Run row, the tool results (as tool
    messages), the abandoned calls' error results and the user's message are written in it, with
    the pending ids cleared there too. On a new thread (`thread_id` None) the thread is created in
    the same transaction, so a rejected request leaves nothing behind. The lock is taken straight
    into STREAMING: the loop starts the model at once. Raises Problem for every rejection.
    """
    run = Run(previous_run_id=body.previous_run_id, model=body.model, request_params=run_request_params(body),
              status=Run.Status.STREAMING, started_at=timezone.now())
    with transaction.atomic():
        if thread_id is None:
            thread, history = _start_new_thread(principal, body, run)
            tools = project_tools_of(principal.project)
        else:
            thread = _start_on_thread(principal, body, run, thread_id)
            tools = project_tools(thread)
            history = selectors.message_list_all(thread=thread)
    thread.project = principal.project  # the loop reads it from async code: no lazy loads there
    started = StartedRun(thread=thread, run=run, body=body, history=history, created_thread=thread_id is None,
                         tools=tools)
    return started


def _start_new_thread(principal: Principal, body: wire.CreateRunBody, run: Run) -> tuple[Thread, list[Message]]:
    """Creates the thread, locked for `run`, and stores the input; returns it with its history.
    Caller holds the transaction."""
    thread = _new_thread(principal, body)
    _check_previous_run(thread, body)
    turn_results_check(thread, _tool_results(body))
    run.thread = thread
    run.save(force_insert=True)
    stored = turn_store(thread=thread, run=run, turn=_turn(body, {}))
    lock_take_created(thread=thread, run_id=run.id, status=RunStatus.STREAMING)
    spec = getattr(body, "thread", None)
    # Without initial messages the history is exactly what was just stored: no need to read it back.
    history = selectors.message_list_all(thread=thread) if spec is not None and spec.initial_messages else stored
    return thread, history


def _start_on_thread(principal: Principal, body: wire.CreateRunBody, run: Run, thread_id: str) -> Thread:
    """Locks the requester's thread for `run` and stores the input. Caller holds the transaction."""
    user_key = principal.user_key(body.user_key)
    results = _tool_results(body)

    def check(locked: Thread) -> None:
        # Before the lock's own check, so a bad request is told so even while a run streams.
        _check_previous_run(locked, body)
        turn_results_check(locked, results)

    def in_lock(locked: Thread) -> None:
        run.thread = locked
        run.save(force_insert=True)
        turn_store(thread=locked, run=run, turn=_turn(body, results))
        locked.pending_tool_call_ids = []

    scope = Thread.objects.filter(project=principal.project, user_key=user_key).annotate(**tool_annotations())
    return lock_take(thread_id=thread_id, run_id=run.id, check=check, in_lock=in_lock, queryset=scope,
                     status=RunStatus.STREAMING)


def _new_thread(principal: Principal, body: wire.CreateRunBody) -> Thread:
    spec = getattr(body, "thread", None) or wire.NewThreadSpec()
    user_key = principal.user_key(spec.user_key or body.user_key)
    metadata = spec.metadata if spec.metadata is not None else getattr(body, "thread_metadata", None)
    return thread_services.thread_create(project=principal.project, user_key=user_key, metadata=metadata,
                                         initial_messages=spec.initial_messages or ())


def run_request_params(body: wire.CreateRunBody) -> dict[str, Any]:
    """What the Run row records of the request (the AG-UI endpoint records the same)."""
    params = body.model_dump(by_alias=True, exclude_none=True, mode="json",
                             include={"tool_choice", "max_tokens", "temperature", "run_metadata"})
    params["toolNames"] = [t.name for t in body.tools or []]
    params["componentNames"] = [c.name for c in body.available_components or []]
    return params


def _turn(body: wire.CreateRunBody, results: dict[str, wire.InToolResultBlock]) -> Turn:
    """The request's message as the turn it adds (runs/turns.py): its tool results, and the rest of
    its content as one user message (none when it only answers tool calls)."""
    other = [b.wire() for b in body.message.content if not isinstance(b, wire.InToolResultBlock)]
    messages = [NewMessage(Message.Role.USER, other, metadata=body.message.metadata)] if other or not results else []
    return Turn(messages=messages, results={call_id: NewMessage(Message.Role.TOOL, [block.wire()])
                                            for call_id, block in results.items()},
                context=body.message.additional_context, retry_repeats_failed_turn=True)


def step_persist(*, thread: Thread, run: Run, message_id: str, content: list[dict], cancelled: bool,
                 tool_messages: list[tuple[str, dict]] = ()) -> None:
    """Stores one model step: the assistant message (once, when it ended) and its tool results."""
    with transaction.atomic():
        if content or cancelled:
            thread_services.message_create(thread=thread, role=Message.Role.ASSISTANT, content=content,
                                           run_id=run.id, is_cancelled=cancelled, message_id=message_id)
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


def run_pause(*, thread: Thread, run: Run, pending_ids: list[str]) -> bool:
    return lock_release(thread_id=thread.id, run_id=run.id, run_status=Run.Status.AWAITING_INPUT,
                        thread_fields={"pending_tool_call_ids": pending_ids, "last_completed_run_id": run.id,
                                       "last_run_cancelled": None, "last_run_error": None},
                        run_fields=_run_fields(run))


def run_complete(*, thread: Thread, run: Run) -> bool:
    return lock_release(thread_id=thread.id, run_id=run.id, run_status=Run.Status.COMPLETED,
                        thread_fields={"pending_tool_call_ids": [], "last_completed_run_id": run.id,
                                       "last_run_cancelled": None, "last_run_error": None},
                        run_fields=_run_fields(run))


def run_cancel(*, thread: Thread, run: Run) -> bool:
    # A cancelled run still counts as the last completed one, so the next message can follow it.
    return lock_release(thread_id=thread.id, run_id=run.id, run_status=Run.Status.CANCELLED,
                        thread_fields={"pending_tool_call_ids": [], "last_completed_run_id": run.id,
                                       "last_run_cancelled": True, "last_run_error": None},
                        error_code="CANCELLED", error_message="The run was cancelled.", run_fields=_run_fields(run))


def run_fail(*, thread: Thread, run: Run, code: str, message: str) -> bool:
    return lock_release(thread_id=thread.id, run_id=run.id, run_status=Run.Status.FAILED,
                        thread_fields={"pending_tool_call_ids": [], "last_completed_run_id": run.id,
                                       "last_run_cancelled": None,
                                       "last_run_error": {"code": code, "message": message}},
                        error_code=code, error_message=message, run_fields=_run_fields(run))


def _run_fields(run: Run) -> dict[str, Any]:
    # The token usage summed over the run's steps is stored once, with how the run ended.
    return {"usage": run.usage} if run.usage is not None else {}


def run_cancel_request(*, principal: Principal, thread_id: str, run_id: str, user_key_raw: object) -> None:
    """Flags the thread's active run `run_id` for cancellation; 404 RUN_NOT_FOUND if it is not the active one."""
    user_key = principal.user_key(user_key_raw)
    selectors.thread_get(project=principal.project, user_key=user_key, thread_id=thread_id)
    if not lock_request_cancel(thread_id=thread_id, run_id=run_id):
        raise Problem(404, "RUN_NOT_FOUND", f"Run {run_id} is not the thread's active run.")


def message_id_new() -> str:
    return new_id("msg")
