"""Storing a turn's input: the one writer behind `/v1` (runs/services.py) and AG-UI (runs/agui/services.py).

A turn is what one run request adds to its thread, already in the thread's own form: results for
the tool calls the thread waits on, the new messages in order, and the context the model gets with
them. Each entry point reads its own request into a `Turn`; `turn_store` writes it the same way for
both, so the two cannot drift on how abandoned calls are answered, where the context rides or when
the paused run is closed (tests/runs/test_turn_storage.py holds them to that).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.problems import Problem
from runs.mcp_inputs import answer_of
from runs.models import Run
from threads import services as thread_services
from threads.models import Message, Thread

ABANDONED_TEXT = "The user sent a new message instead of answering this tool call."


@dataclass
class NewMessage:
    """A message the thread does not store yet, in the thread's own form."""

    role: str  # threads.models.Message.Role value
    content: list[dict[str, Any]]
    external_id: str | None = None  # the client's own id (AG-UI); /v1 messages have none
    metadata: dict[str, Any] | None = None


@dataclass
class Turn:
    """What one request adds to its thread: new messages in order, and tool results by call id."""

    messages: list[NewMessage] = field(default_factory=list)
    results: dict[str, NewMessage] = field(default_factory=dict)
    context: Any = None  # the model's additional context for this turn
    # A /v1 Retry: a user message repeating the one of a failed last turn answers it instead of being
    # stored twice. AG-UI names every message by the client's id, so a repeat there is a new message.
    retry_repeats_failed_turn: bool = False

    @property
    def empty(self) -> bool:
        return not self.results and not any(m.role == Message.Role.USER for m in self.messages)


def turn_results_check(thread: Thread, results: dict[str, Any]) -> None:
    """400 INVALID_TOOL_RESULT unless the results (by call id) answer exactly the pending calls
    (docs/protocol.md#starting-a-run, check 4); no results is always fine."""
    if not results:
        return
    pending = set(thread.pending_tool_call_ids or [])
    if not pending:
        raise Problem(400, "INVALID_TOOL_RESULT", "The thread has no pending tool calls.",
                      extraToolCallIds=sorted(results))
    missing, extra = sorted(pending - set(results)), sorted(set(results) - pending)
    if missing or extra:
        raise Problem(400, "INVALID_TOOL_RESULT", "Tool results must answer exactly the pending tool calls.",
                      missingToolCallIds=missing, extraToolCallIds=extra)


def turn_store(*, thread: Thread, run: Run, turn: Turn) -> list[Message]:
    """Writes the turn; returns the messages stored. Caller holds the thread's run lock transaction,
    after checking that the results answer exactly the pending calls.

    First a result for each pending call, in the order the model made them (the client's, or an
    error result for a call the user moved on from); then the new messages in order. The context
    rides on the last user message, else on the last tool result. When calls were pending, the
    paused run that made them (the thread's last completed run) is done now.

    A pending call that is an MCP tool's request for input (runs/mcp_inputs.py) stores no message: its
    answer goes on `run.input_retries` (in memory), for the run to call the tool again with it, and the
    thread's pending requests are cleared; one the user moved on from gives the MCP call its error result.
    """
    pending = thread.pending_tool_call_ids or []
    inputs = thread.pending_inputs or {}
    rows: list[dict[str, Any]] = []
    run.input_retries = []
    for tool_call_id in pending:
        result = turn.results.get(tool_call_id)
        entry = inputs.get(tool_call_id)
        if entry is not None and result is not None:
            run.input_retries.append((tool_call_id, {**entry, "answers": [*entry.get("answers", []),
                                                                          answer_of(result.content[0])]}))
            continue
        if entry is not None:
            tool_call_id, result = entry["callId"], None  # abandoned: the MCP call gets the error result
        content = result.content if result is not None else [
            {"type": "tool_result", "toolUseId": tool_call_id, "isError": True,
             "content": [{"type": "text", "text": ABANDONED_TEXT}]}]
        rows.append({"role": Message.Role.TOOL, "content": content, "tool_call_id": tool_call_id,
                     "external_id": result.external_id if result is not None else None,
                     "metadata": result.metadata if result is not None else None})
    for new in turn.messages:
        if (turn.retry_repeats_failed_turn and new.role == Message.Role.USER
                and _is_retry_of_failed_turn(thread, new.content)):
            continue
        rows.append({"role": new.role, "content": new.content, "external_id": new.external_id,
                     "metadata": new.metadata})
    # Chosen before writing, so the context goes in with its message's INSERT.
    carrier = next((row for role in (Message.Role.USER, Message.Role.TOOL) for row in reversed(rows)
                    if row["role"] == role), None)
    if turn.context is not None and carrier is not None:
        carrier["additional_context"] = turn.context
    thread.pending_inputs = None
    stored = [thread_services.message_create(thread=thread, run_id=run.id, **row) for row in rows]
    if pending and thread.last_completed_run_id:
        # Only a paused run leaves calls pending, and it is the thread's last completed run.
        Run.objects.filter(id=thread.last_completed_run_id, status=Run.Status.AWAITING_INPUT).update(
            status=Run.Status.COMPLETED)
    return stored


def _is_retry_of_failed_turn(thread: Thread, content: list[dict]) -> bool:
    """True when `content` repeats the user message of the thread's last run, which failed before it
    stored anything after that message: the run then answers the message already stored (a Retry),
    instead of storing it a second time. Caller holds the thread's run lock transaction."""
    if not content or not thread.last_run_error or not thread.last_completed_run_id:
        return False
    # The content (a screenshot, maybe) is read only when the role and run say it may be a retry.
    last = thread.messages.defer("content").order_by("-created_at", "-id").first()
    return (last is not None and last.role == Message.Role.USER and last.run_id == thread.last_completed_run_id
            and last.content == content)
