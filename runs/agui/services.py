"""Starting a run from an AG-UI request (`POST /v1/agui`, docs/protocol.md#the-ag-ui-endpoint).

An adapter over the one run start (runs/begin.py `run_begin`): the same rules in the same order, the
same lock, check of the tool results and storage of the turn (runs/turns.py) and `StartedRun` as a
/v1 run, so the advance loop runs it unchanged; only how the thread is named and how the turn is
read differ.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ag_ui.core import RunAgentInput
from django.conf import settings
from pydantic import ValidationError

from clientsdk import wire
from core.problems import Problem, validation_error
from projects.auth import Principal
from runs import bodies
from runs.agui import protocol as agui
from runs.begin import RunRequest, StartedRun, TurnRead, run_begin
from runs.turns import Turn, turn_results_check
from threads.models import Message, Thread

SERVER_THREAD_PREFIX = "thr_"


def agui_run_start(*, principal: Principal, run_input: RunAgentInput) -> StartedRun:
    """Checks an AG-UI request and starts its run through the one start (runs/begin.py `run_begin`).

    Checks in /v1's order: the body, the user, the thread (404 for another user's), the tool
    results (400 INVALID_TOOL_RESULT unless they answer exactly the pending calls), then the lock
    (409 CONCURRENT_RUN). The new thread, the Run row, the new messages (with the client's ids)
    and the state are written in the lock's transaction, so a rejected request writes nothing.
    The returned run's `thread.agui_state` is the state its stream sends back: the client's when it
    sent one, the stored one when it sent none or an empty one (docs/protocol.md#the-ag-ui-endpoint).
    """
    agui.check_input(run_input, max_messages=settings.AGUI_MAX_MESSAGES)
    user_key = _user_key(principal, run_input)
    server_thread = run_input.thread_id.startswith(SERVER_THREAD_PREFIX)
    # AG-UI names no model: the project's first model answers, the others are its fallbacks. The turn
    # is known once the thread is read (`content` None): the context budget checks it then, and the
    # reservation counts its input as the context budget or, without one, the system prompt alone
    # (docs/abuse-and-limits.md).
    tools = agui.client_tools(run_input)
    return run_begin(_AguiRequest(
        principal=principal, user_key=user_key, model=None, max_tokens=None,
        # What run_request_params records of a /v1 body with these tools and nothing else set.
        request_params={"toolNames": [t.name for t in tools], "componentNames": [], "aguiRunId": run_input.run_id},
        # A `thr_…` id names a server thread (one made through /v1, say); any other is the client's own.
        thread_id=run_input.thread_id if server_thread else None,
        client_thread_id=None if server_thread else run_input.thread_id,
        run_input=run_input, client_tools=tools))


@dataclass
class _AguiRequest(RunRequest):
    """An AG-UI request as the one start's input: its turn is the messages the thread does not hold yet."""

    run_input: RunAgentInput | None = None
    client_tools: list[wire.ClientTool] | None = None

    def read_turn(self, thread: Thread) -> TurnRead:
        turn = _plan(thread, self.run_input)
        body = _run_body(_turn_blocks(turn), self.client_tools)
        turn.context = agui.model_context(self.run_input, _state(thread, self.run_input))
        state = None if agui.state_is_empty(self.run_input.state) else self.run_input.state
        return TurnRead(turn=turn, body=body, previous_run_id=thread.last_completed_run_id, state=state)


def _user_key(principal: Principal, run_input: RunAgentInput) -> str:
    try:
        return principal.user_key_checked(agui.forwarded_user_key(run_input))
    except Problem as problem:
        if problem.code == "VALIDATION_ERROR" and problem.extra.get("field") == "userKey":
            raise validation_error(problem.detail.replace("userKey", "forwardedProps.userKey"),
                                   field="forwardedProps.userKey") from None
        raise


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


def _turn_blocks(turn: Turn) -> list[dict]:
    """The turn's new content as one /v1 message's: the user's blocks, then the tool results."""
    blocks = [b for m in turn.messages if m.role == "user" for b in m.content]
    return blocks + [m.content[0] for m in turn.results.values()]


def _run_body(blocks: list[dict], tools: list[wire.ClientTool]) -> wire.CreateRunBody:
    """The turn as a /v1 run body: what the advance loop reads (the client tools; no components)."""
    try:
        return bodies.CreateRunBody.model_validate({
            "message": {"role": "user", "content": blocks}, "tools": [t.wire() for t in tools],
        })
    except ValidationError as exc:  # what /v1 would refuse in its own body, e.g. an over-long id
        raise validation_error(f"messages: {exc.errors(include_url=False)[0]['msg']}", field="messages") from None
