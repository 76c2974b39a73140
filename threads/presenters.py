"""Rows → wire shapes (clientsdk.wire), the only place that knows how a row looks on the wire."""
from __future__ import annotations

from clientsdk import wire
from projects.identities import user_key_shown
from threads.models import LEASE_EXPIRED_ERROR, Message, RunStatus, Suggestion, Thread


def thread_to_wire(thread: Thread) -> wire.Thread:
    if thread.has_dead_run:
        # Shown as it is, by any process, before anyone records it (docs/protocol.md#after-a-crash): the watcher
        # of some process, or the next run, records the same state in the database.
        return _wire(thread, run_status=RunStatus.IDLE, current_run_id=None, status_message=None,
                     last_run_cancelled=None, last_run_error=LEASE_EXPIRED_ERROR)
    return _wire(thread, run_status=thread.run_status, current_run_id=thread.current_run_id,
                 status_message=thread.status_message, last_run_cancelled=thread.last_run_cancelled,
                 last_run_error=thread.last_run_error)


def _wire(thread: Thread, **run_state) -> wire.Thread:
    return wire.Thread(
        id=thread.id,
        name=thread.name,
        user_key=user_key_shown(thread.user_key),
        **run_state,
        pending_tool_call_ids=thread.pending_tool_call_ids or None,
        last_completed_run_id=thread.last_completed_run_id,
        metadata=thread.metadata,
        created_at=thread.created_at,
        updated_at=thread.updated_at,
    )


def message_content(message: Message) -> list[dict]:
    """Stored blocks with each component's current state filled in."""
    blocks = []
    for block in message.content:
        if block.get("type") == "component":
            block = {**block, "state": message.component_state.get(block["id"], block.get("state") or {})}
        blocks.append(block)
    return blocks


def message_to_wire(message: Message) -> wire.Message:
    # A stored tool result is shown as an assistant message whose only block is the tool_result
    # (docs/protocol.md#endpoints): the wire has no `tool` role.
    role = "assistant" if message.role == Message.Role.TOOL else message.role
    return wire.Message(
        id=message.id,
        role=role,
        content=message_content(message),
        created_at=message.created_at,
        metadata=message.metadata,
        parent_message_id=message.parent_message_id,
        is_cancelled=True if message.is_cancelled else None,
        reasoning=message.reasoning or None,
        reasoning_duration_ms=message.reasoning_duration_ms,
    )


def named_thread_to_wire(thread: Thread) -> wire.NamedThread:
    return wire.NamedThread(**thread_to_wire(thread).model_dump(), project_id=thread.project_id)


def suggestion_to_wire(suggestion: Suggestion) -> wire.Suggestion:
    return wire.Suggestion(
        id=suggestion.id,
        message_id=suggestion.message_id,
        title=suggestion.title,
        description=suggestion.description,
        detailed_suggestion=suggestion.detailed_suggestion,
        metadata=suggestion.metadata,
    )
