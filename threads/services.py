"""Writes to threads and messages. Every entry point (REST, SSE runs, the page, the admin) calls these."""
from __future__ import annotations

from typing import Any, Callable, Iterable

import jsonpatch
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from clientsdk import wire
from core.problems import BUSY_RETRY_AFTER, Problem
from core.statements import Insert
from projects.config import project_settings
from projects.models import Project
from threads.changes import thread_changed
from threads.initial_messages import initial_messages_check
from threads.models import Message, Thread

_THREAD_INSERT = Insert(Thread)
_MESSAGE_INSERT = Insert(Message)


def thread_create(
    *,
    project: Project,
    user_key: str,
    metadata: dict[str, Any] | None = None,
    initial_messages: Iterable[wire.InitialMessage] = (),
    name: str | None = None,
    external_id: str | None = None,
    before_insert: Callable[[Thread], None] | None = None,
) -> Thread:
    """Creates a thread with its initial messages. `before_insert(thread)` may set more fields on
    the new row before its INSERT (the run path takes the run lock there: one statement, not two)."""
    initial_messages = list(initial_messages)
    initial_messages_check(project=project, messages=initial_messages, field="initialMessages")
    # No savepoint inside a caller's transaction (the run start's): a failure rolls that back anyway.
    with transaction.atomic(savepoint=False):
        thread = Thread(project=project, user_key=user_key, metadata=metadata, name=name, external_id=external_id,
                        sealed=project_settings(project).encrypt_content)
        if before_insert is not None:
            before_insert(thread)
        _THREAD_INSERT.save(thread)
        for initial in initial_messages:
            message_create(thread=thread, role=initial.role,
                           content=[b.wire() for b in initial.content], metadata=initial.metadata)
    return thread


def thread_update(*, thread: Thread, name: str | None = None, metadata: dict[str, Any] | None = None) -> Thread:
    fields = ["updated_at"]
    if name is not None:
        thread.name = name
        fields.append("name")
    if metadata is not None:
        thread.metadata = metadata
        fields.append("metadata")
    thread.updated_at = timezone.now()
    thread.save(update_fields=fields)
    thread_changed(thread_id=thread.pk)
    return thread


def thread_delete(*, thread: Thread) -> None:
    """Deletes the thread with its messages and runs; 409 RUN_ACTIVE while a live run holds it.

    Holds the thread's row lock for the check and the delete, so a run cannot start in between.
    """
    with transaction.atomic():
        locked = thread_lock(thread_id=thread.pk)
        if locked.has_live_run:
            raise Problem(409, "RUN_ACTIVE", "The thread has an active run.", currentRunId=locked.current_run_id,
                          retryAfter=BUSY_RETRY_AFTER)
        locked.delete()


def thread_lock(*, thread_id: str, queryset: QuerySet[Thread] | None = None) -> Thread:
    """The thread's row, read and locked for the caller's open transaction: the one place a thread
    is locked (the run lock, runs/lock.py, takes it here too; only the expired-lease sweep,
    runs/recovery/leases.py, locks a batch of rows in its own statement, skipping the ones held).

    One SELECT … FOR UPDATE of the thread's own row (not of tables `queryset` joins); on SQLite the
    IMMEDIATE transaction mode set in settings holds the database write lock from BEGIN instead.
    `queryset` (default all threads) narrows the rows to what the requester may see, or annotates
    them to read more in the same statement. Raises Problem 404 THREAD_NOT_FOUND when no row
    matches: unknown, not the requester's, or deleted since the caller looked it up.
    """
    rows = (Thread.objects.all() if queryset is None else queryset).select_for_update(of=("self",))
    thread = rows.filter(pk=thread_id).first()
    if thread is None:
        raise Problem(404, "THREAD_NOT_FOUND", f"Thread {thread_id} was not found.")
    return thread


def message_create(
    *,
    thread: Thread,
    role: str,
    content: list[dict],
    run_id: str | None = None,
    tool_call_id: str | None = None,
    parent_message_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    additional_context: Any = None,
    is_cancelled: bool = False,
    message_id: str | None = None,
    external_id: str | None = None,
    reasoning: list[str] | None = None,
    reasoning_duration_ms: int | None = None,
    reasoning_blocks: list[dict] | None = None,
) -> Message:
    kwargs = {"id": message_id} if message_id else {}
    # Written once, not compiled per message (core/statements.py): the run path stores several per run.
    return _MESSAGE_INSERT.save(Message(
        thread=thread, role=role, content=content, run_id=run_id, tool_call_id=tool_call_id,
        parent_message_id=parent_message_id, metadata=metadata, additional_context=additional_context,
        is_cancelled=is_cancelled, external_id=external_id, reasoning=reasoning,
        reasoning_duration_ms=reasoning_duration_ms, reasoning_blocks=reasoning_blocks, **kwargs,
    ))


def component_state_set(*, thread: Thread, component_id: str, state: dict[str, Any] | None,
                        patch: list[dict] | None) -> dict[str, Any]:
    """Replaces (`state`) or patches (`patch`, RFC 6902) a component's state; returns the new state.

    Holds the thread's row lock so the state cannot change under a run: 409 RUN_ACTIVE while one is
    active. 404 COMPONENT_NOT_FOUND for an unknown component, 400 INVALID_JSON_PATCH when the patch
    does not apply.
    """
    if (state is None) == (patch is None) or (patch is not None and not patch):
        raise Problem(400, "VALIDATION_ERROR", "Send exactly one of state (an object) or patch (a non-empty array).",
                      field="state")
    with transaction.atomic():
        locked = thread_lock(thread_id=thread.pk)
        if locked.has_live_run:
            raise Problem(409, "RUN_ACTIVE", "The thread has an active run.", currentRunId=locked.current_run_id,
                          retryAfter=BUSY_RETRY_AFTER)
        message = _message_with_component(locked, component_id)
        current = message.component_state.get(component_id, {})
        if patch is not None:
            try:
                state = jsonpatch.apply_patch(current, patch)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError, ValueError):
                raise Problem(400, "INVALID_JSON_PATCH", "The patch does not apply to the component's state.") from None
            if not isinstance(state, dict):
                raise Problem(400, "INVALID_JSON_PATCH", "The patched state must be an object.")
        message.component_state = {**message.component_state, component_id: state}
        message.save(update_fields=["component_state"])
        Thread.objects.filter(pk=locked.pk).update(updated_at=timezone.now())
        thread_changed(thread_id=locked.pk)
    return state


def _message_with_component(thread: Thread, component_id: str) -> Message:
    for message in thread.messages.filter(role=Message.Role.ASSISTANT).order_by("-created_at"):
        if any(b.get("type") == "component" and b.get("id") == component_id for b in message.content):
            return message
    raise Problem(404, "COMPONENT_NOT_FOUND", f"Component {component_id} was not found.")
