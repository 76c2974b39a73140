"""Starting a run from an AG-UI request (`POST /v1/agui`, docs/protocol.md#the-ag-ui-endpoint).

The same lock (`lock_take`), check of the tool results and storage of the turn (runs/turns.py) and
`StartedRun` as a /v1 run, so the advance loop runs it unchanged; only how the thread is found and
how the turn is read differ.
"""
from __future__ import annotations

from typing import Any

from ag_ui.core import RunAgentInput
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from pydantic import ValidationError

from clientsdk import wire
from core.problems import Problem, validation_error
from projects import limits
from projects.auth import Principal
from projects.models import Project
from runs import bodies
from runs.agui import protocol as agui
from runs.lock import lock_take
from runs.models import Run
from runs.services import (StartedRun, run_message_check, run_model_rules, run_request_params, run_reservation,
                           run_reserved_note)
from runs.start_history import history_after_lock
from runs.turns import Turn, turn_results_check, turn_store
from threads import selectors
from threads import services as thread_services
from threads.models import Message, RunStatus, Thread
from tools.selectors import project_tools_of

SERVER_THREAD_PREFIX = "thr_"


def agui_run_start(*, principal: Principal, run_input: RunAgentInput) -> StartedRun:
    """Checks an AG-UI request, finds or creates its thread, takes the lock and stores the turn.

    Checks in /v1's order: the body, the user, the thread (404 for another user's), the tool
    results (400 INVALID_TOOL_RESULT unless they answer exactly the pending calls), then the lock
    (409 CONCURRENT_RUN). The new thread, the Run row, the new messages (with the client's ids)
    and the state are written in the lock's transaction, so a rejected request writes nothing.
    The returned run's `thread.agui_state` is the state its stream sends back: the client's when it
    sent one, the stored one when it sent none or an empty one (docs/protocol.md#the-ag-ui-endpoint).
    """
    agui.check_input(run_input, max_messages=settings.AGUI_MAX_MESSAGES)
    user_key = _user_key(principal, run_input)
    # AG-UI names no model: the project's first model answers, the others are its fallbacks. The
    # context budget is /v1's (runs/services.py), so the model is sent no more than it allows.
    models, context_budget = run_model_rules(principal, requested=None, max_tokens=None)
    # The turn is known once the thread is read: the reservation counts its input as the context budget
    # or, without one, as the system prompt alone (docs/abuse-and-limits.md).
    budget = limits.call_admit(project=principal.project, user_key=user_key,
                               reserve=run_reservation(principal, [], context_budget, None))
    tools = agui.client_tools(run_input)
    with transaction.atomic():
        thread = _thread_for(principal.project, user_key, run_input.thread_id)
        # Checked before the lock too, so a bad request is told so even while a run streams.
        turn = _plan(thread, run_input)
        body = _run_body(run_input, turn, tools)
        # The new turn alone too large: refused here, the transaction (a new thread included) rolled back.
        run_message_check(principal, body, context_budget)
        run = Run(thread=thread, request_params={**run_request_params(body), "aguiRunId": run_input.run_id},
                  status=Run.Status.STREAMING, started_at=timezone.now())

        def in_lock(locked: Thread) -> None:
            locked_turn = _plan(locked, run_input)
            run.previous_run_id = locked.last_completed_run_id
            run_reserved_note(run, budget)
            run.save(force_insert=True)
            locked_turn.context = agui.model_context(run_input, _state(locked, run_input))
            turn_store(thread=locked, run=run, turn=locked_turn)
            locked.pending_tool_call_ids = []
            locked.pending_inputs = None
            if not agui.state_is_empty(run_input.state):
                locked.agui_state = run_input.state

        # Straight into STREAMING, as /v1 runs: the loop starts the model at once.
        thread = lock_take(thread_id=thread.id, run_id=run.id, in_lock=in_lock, status=RunStatus.STREAMING)
        tools = project_tools_of(principal.project)
    # After the commit, so the images and files it holds do not load under the thread's row lock.
    # Trimmed to the context budget as /v1's (runs/context_budget.py: oldest turns first, a tool call
    # never apart from its result).
    history = history_after_lock(thread=thread, run=run, budget=context_budget)
    thread.project = principal.project  # the loop reads it from async code: no lazy loads there
    started = StartedRun(thread=thread, run=run, body=body, history=history, tools=tools, budget=budget,
                         models=models, context_budget=context_budget)
    return started


def _user_key(principal: Principal, run_input: RunAgentInput) -> str:
    try:
        return principal.user_key_checked(agui.forwarded_user_key(run_input))
    except Problem as problem:
        if problem.code == "VALIDATION_ERROR" and problem.extra.get("field") == "userKey":
            raise validation_error(problem.detail.replace("userKey", "forwardedProps.userKey"),
                                   field="forwardedProps.userKey") from None
        raise


def _thread_for(project: Project, user_key: str, client_thread_id: str) -> Thread:
    """The user's thread for the client's `threadId`, created on first use in the caller's transaction.

    A `thr_…` id names a server thread (one made through /v1, say): it must be this user's, else
    404 as for any thread that is not theirs. Any other id is the client's own, scoped to the user.
    """
    if client_thread_id.startswith(SERVER_THREAD_PREFIX):
        return selectors.thread_get(project=project, user_key=user_key, thread_id=client_thread_id)
    thread = Thread.objects.filter(project=project, user_key=user_key, external_id=client_thread_id).first()
    if thread is not None:
        return thread
    try:
        with transaction.atomic():
            return thread_services.thread_create(project=project, user_key=user_key, external_id=client_thread_id)
    except IntegrityError:
        # A concurrent first request created it meanwhile; the lock then tells the two apart.
        return Thread.objects.get(project=project, user_key=user_key, external_id=client_thread_id)


def _plan(thread: Thread, run_input: RunAgentInput) -> Turn:
    known: set[str] = set()
    answered: set[str] = set()
    for message_id, external_id, role, tool_call_id in thread.messages.values_list(
            "id", "external_id", "role", "tool_call_id"):
        known.add(message_id)
        if external_id:
            known.add(external_id)
        if role == Message.Role.TOOL and tool_call_id:
            answered.add(tool_call_id)
    turn = agui.plan_turn(run_input, known_ids=known, answered_call_ids=answered)
    if turn.empty:
        raise validation_error("The request has no new user message and no tool result to answer.",
                               field="messages")
    turn_results_check(thread, turn.results)
    return turn


def _state(thread: Thread, run_input: RunAgentInput) -> Any:
    return thread.agui_state if agui.state_is_empty(run_input.state) else run_input.state


def _run_body(run_input: RunAgentInput, turn: Turn, tools: list[wire.ClientTool]) -> wire.CreateRunBody:
    """The turn as a /v1 run body: what the advance loop reads (the client tools; no components)."""
    blocks = [b for m in turn.messages if m.role == "user" for b in m.content]
    blocks += [m.content[0] for m in turn.results.values()]
    try:
        return bodies.CreateRunBody.model_validate({
            "message": {"role": "user", "content": blocks}, "tools": [t.wire() for t in tools],
        })
    except ValidationError as exc:  # what /v1 would refuse in its own body, e.g. an over-long id
        raise validation_error(f"messages: {exc.errors(include_url=False)[0]['msg']}", field="messages") from None
