"""Fold AG-UI events into a thread snapshot with a pure function.

`accumulate(snapshot, event) -> snapshot` never mutates its inputs: the snapshot types are frozen
dataclasses holding tuples, every change builds new objects along the changed path, and component
props are patched with `jsonpatch` on a copy. Unchanged parts are shared between the old and the new
snapshot, which is safe because nothing ever changes them in place.

What it tracks: the run (ids, status, error), assistant messages with their text, tool calls
(arguments as streamed text and as parsed value, results when known), components (props applied
from the streamed JSON Patch operations), and the tool calls the paused run waits for.
"""
from __future__ import annotations

import copy
import json
import logging
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import jsonpatch
from ag_ui.core import EventType

from .partial_json import parse_partial
from .wire import AWAITING_INPUT, COMPONENT_END, COMPONENT_PROPS_DELTA, COMPONENT_START

__all__ = [
    "ThreadSnapshot",
    "SnapshotMessage",
    "ToolCall",
    "Component",
    "PendingToolCall",
    "RunErrorInfo",
    "accumulate",
    "AWAITING_INPUT",
    "COMPONENT_START",
    "COMPONENT_PROPS_DELTA",
    "COMPONENT_END",
]

logger = logging.getLogger(__name__)


RunStatus = Literal["idle", "running", "awaiting_input", "finished", "error", "cancelled"]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments_text: str = ""
    arguments: Any = None  # parsed; a partial value while the arguments still stream
    complete: bool = False
    result: str | None = None  # the result's text, once the server or this client reported it
    is_error: bool = False


@dataclass(frozen=True)
class Component:
    id: str
    name: str
    props: dict[str, Any] = field(default_factory=dict)
    streaming: bool = True


@dataclass(frozen=True)
class SnapshotMessage:
    id: str
    role: str = "assistant"
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    components: tuple[Component, ...] = ()
    streaming: bool = True


@dataclass(frozen=True)
class PendingToolCall:
    tool_call_id: str
    tool_name: str
    arguments: str  # the complete JSON text, as sent by the server

    def parsed_arguments(self) -> Any:
        """The arguments as a Python value ({} for empty text). Raises ValueError on bad JSON."""
        return json.loads(self.arguments) if self.arguments.strip() else {}


@dataclass(frozen=True)
class RunErrorInfo:
    message: str
    code: str | None = None
    category: str | None = None
    is_retryable: bool = False


@dataclass(frozen=True)
class ThreadSnapshot:
    thread_id: str | None = None
    run_id: str | None = None
    status: RunStatus = "idle"
    messages: tuple[SnapshotMessage, ...] = ()
    pending_tool_calls: tuple[PendingToolCall, ...] = ()
    error: RunErrorInfo | None = None

    @property
    def last_text(self) -> str:
        """The text of the last assistant message that has any text ('' if none)."""
        for message in reversed(self.messages):
            if message.role == "assistant" and message.text:
                return message.text
        return ""

    def tool_call(self, tool_call_id: str) -> ToolCall | None:
        for message in self.messages:
            for call in message.tool_calls:
                if call.id == tool_call_id:
                    return call
        return None

    def component(self, component_id: str) -> Component | None:
        for message in self.messages:
            for comp in message.components:
                if comp.id == component_id:
                    return comp
        return None


def accumulate(snapshot: ThreadSnapshot, event: Any) -> ThreadSnapshot:
    """Return the snapshot after `event` (an `ag_ui.core` event model). Pure: inputs stay unchanged.

    Events this function does not use return the same snapshot object.
    """
    handler = _HANDLERS.get(event.type)
    return handler(snapshot, event) if handler else snapshot


# --- helpers that build new tuples --------------------------------------------------------------

def _upsert_message(snapshot: ThreadSnapshot, message_id: str, change: Any, role: str = "assistant") -> ThreadSnapshot:
    """Replace the message `message_id` with `change(message)`; create it first if unknown."""
    messages = list(snapshot.messages)
    for i, message in enumerate(messages):
        if message.id == message_id:
            messages[i] = change(message)
            return replace(snapshot, messages=tuple(messages))
    messages.append(change(SnapshotMessage(id=message_id, role=role)))
    return replace(snapshot, messages=tuple(messages))


def _update_tool_call(snapshot: ThreadSnapshot, tool_call_id: str, change: Any) -> ThreadSnapshot:
    return _update_in_message(snapshot, "tool_calls", tool_call_id, change, "tool call")


def _update_component(snapshot: ThreadSnapshot, component_id: str, change: Any) -> ThreadSnapshot:
    return _update_in_message(snapshot, "components", component_id, change, "component")


def _update_in_message(snapshot: ThreadSnapshot, field_name: str, item_id: str, change: Any,
                       kind: str) -> ThreadSnapshot:
    """Replace the item `item_id` of some message's `field_name` tuple with `change(item)`.

    An id no message holds leaves the snapshot as it is (logged at debug level as an unknown `kind`).
    """
    for i, message in enumerate(snapshot.messages):
        items = getattr(message, field_name)
        for j, item in enumerate(items):
            if item.id == item_id:
                new_items = items[:j] + (change(item),) + items[j + 1:]
                new_message = replace(message, **{field_name: new_items})
                return replace(snapshot, messages=snapshot.messages[:i] + (new_message,) + snapshot.messages[i + 1:])
    logger.debug("event for unknown %s %s ignored", kind, item_id)
    return snapshot


# --- one handler per event type ------------------------------------------------------------------

def _run_started(s: ThreadSnapshot, e: Any) -> ThreadSnapshot:
    return replace(s, thread_id=e.thread_id, run_id=e.run_id, status="running", pending_tool_calls=(), error=None)


def _run_finished(s: ThreadSnapshot, e: Any) -> ThreadSnapshot:
    return replace(s, status="awaiting_input" if s.pending_tool_calls else "finished")


def _run_error(s: ThreadSnapshot, e: Any) -> ThreadSnapshot:
    extra = e.model_extra or {}
    info = RunErrorInfo(
        message=e.message,
        code=e.code,
        category=extra.get("category"),
        is_retryable=bool(extra.get("isRetryable", extra.get("is_retryable", False))),
    )
    # Whatever was still streaming stops here.
    messages = tuple(replace(m, streaming=False) if m.streaming else m for m in s.messages)
    return replace(s, status="cancelled" if e.code == "CANCELLED" else "error", error=info, messages=messages)


def _text_start(s: ThreadSnapshot, e: Any) -> ThreadSnapshot:
    return _upsert_message(s, e.message_id, lambda m: m, role=e.role or "assistant")


def _text_content(s: ThreadSnapshot, e: Any) -> ThreadSnapshot:
    return _upsert_message(s, e.message_id, lambda m: replace(m, text=m.text + e.delta))


def _text_end(s: ThreadSnapshot, e: Any) -> ThreadSnapshot:
    return _upsert_message(s, e.message_id, lambda m: replace(m, streaming=False))


def _tool_start(s: ThreadSnapshot, e: Any) -> ThreadSnapshot:
    call = ToolCall(id=e.tool_call_id, name=e.tool_call_name)
    parent = e.parent_message_id or f"tool:{e.tool_call_id}"
    return _upsert_message(s, parent, lambda m: replace(m, tool_calls=m.tool_calls + (call,)))


def _tool_args(s: ThreadSnapshot, e: Any) -> ThreadSnapshot:
    def change(call: ToolCall) -> ToolCall:
        text = call.arguments_text + e.delta
        return replace(call, arguments_text=text, arguments=parse_partial(text))

    return _update_tool_call(s, e.tool_call_id, change)


def _tool_end(s: ThreadSnapshot, e: Any) -> ThreadSnapshot:
    def change(call: ToolCall) -> ToolCall:
        try:
            arguments = json.loads(call.arguments_text) if call.arguments_text.strip() else {}
        except ValueError:
            # The text is all there is: a trailing number is final now.
            arguments = parse_partial(call.arguments_text, complete=True)
        return replace(call, arguments=arguments, complete=True)

    return _update_tool_call(s, e.tool_call_id, change)


def _tool_result(s: ThreadSnapshot, e: Any) -> ThreadSnapshot:
    content = e.content
    if not isinstance(content, str):
        content = "".join(getattr(part, "text", "") or "" for part in content)
    extra = e.model_extra or {}
    is_error = bool(extra.get("isError", extra.get("is_error", False)))
    return _update_tool_call(s, e.tool_call_id, lambda c: replace(c, result=content, is_error=is_error))


def _custom(s: ThreadSnapshot, e: Any) -> ThreadSnapshot:
    value = e.value if isinstance(e.value, dict) else {}
    if e.name == AWAITING_INPUT:
        pending = tuple(
            PendingToolCall(
                tool_call_id=str(p.get("toolCallId", "")),
                tool_name=str(p.get("toolName", "")),
                arguments=p.get("arguments") if isinstance(p.get("arguments"), str) else json.dumps(p.get("arguments") or {}),
            )
            for p in value.get("pendingToolCalls") or ()
            if isinstance(p, dict)
        )
        return replace(s, pending_tool_calls=pending)
    if e.name in (COMPONENT_START, COMPONENT_PROPS_DELTA, COMPONENT_END) and not value.get("componentId"):
        logger.debug("component event without componentId ignored")
        return s
    if e.name == COMPONENT_START:
        comp = Component(id=value["componentId"], name=value.get("componentName", ""))
        parent = value.get("messageId") or f"component:{comp.id}"
        return _upsert_message(s, parent, lambda m: replace(m, components=m.components + (comp,)))
    if e.name == COMPONENT_PROPS_DELTA:
        operations = value.get("operations") or []

        def patch(comp: Component) -> Component:
            try:
                props = jsonpatch.apply_patch(comp.props, operations, in_place=False)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                logger.warning("props patch for component %s did not apply: %s", comp.id, exc)
                return comp
            return replace(comp, props=props if isinstance(props, dict) else copy.deepcopy(comp.props))

        return _update_component(s, value["componentId"], patch)
    if e.name == COMPONENT_END:
        return _update_component(s, value["componentId"], lambda c: replace(c, streaming=False))
    return s


def _messages_snapshot(s: ThreadSnapshot, e: Any) -> ThreadSnapshot:
    """AG-UI's MESSAGES_SNAPSHOT (AG-UI's message shape) replaces the messages folded so far, as AG-UI's
    rule says. This server's run streams send none (a run taken over goes on under the ids already
    seen: docs/operations.md#takeover); an AG-UI agent may. Tool messages become their calls' results."""
    results = {m.tool_call_id: m.content for m in e.messages if m.role == "tool"}
    messages = []
    for m in e.messages:
        if m.role == "tool":
            continue
        calls = tuple(
            ToolCall(id=c.id, name=c.function.name, arguments_text=c.function.arguments,
                     arguments=parse_partial(c.function.arguments, complete=True), complete=True,
                     result=results.get(c.id))
            for c in getattr(m, "tool_calls", None) or ())
        text = m.content if isinstance(m.content, str) else ""
        messages.append(SnapshotMessage(id=m.id, role=m.role, text=text, tool_calls=calls, streaming=False))
    return replace(s, messages=tuple(messages))


_HANDLERS = {
    EventType.MESSAGES_SNAPSHOT: _messages_snapshot,
    EventType.RUN_STARTED: _run_started,
    EventType.RUN_FINISHED: _run_finished,
    EventType.RUN_ERROR: _run_error,
    EventType.TEXT_MESSAGE_START: _text_start,
    EventType.TEXT_MESSAGE_CONTENT: _text_content,
    EventType.TEXT_MESSAGE_END: _text_end,
    EventType.TOOL_CALL_START: _tool_start,
    EventType.TOOL_CALL_ARGS: _tool_args,
    EventType.TOOL_CALL_END: _tool_end,
    EventType.TOOL_CALL_RESULT: _tool_result,
    EventType.CUSTOM: _custom,
}
