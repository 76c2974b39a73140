"""AG-UI at the edge (`POST /v1/agui`, docs/protocol.md#the-ag-ui-endpoint): pure mapping, no database, no HTTP.

In: an `ag_ui.core.RunAgentInput` and what the thread already stores → the turn it adds (`plan_turn`),
the client tools (`client_tools`) and the context the model gets. Out: the advance loop's events as
plain AG-UI (`agui_events`): the client's own thread and run ids, a STATE_SNAPSHOT after RUN_STARTED,
and nothing Tambo-specific, so a generic client's own verification accepts the stream.
"""
from __future__ import annotations

import json
from typing import Any, AsyncIterator

from ag_ui.core import (AssistantMessage, BaseEvent, CustomEvent, DeveloperMessage, Interrupt, ReasoningEndEvent,
                        ReasoningMessageContentEvent, ReasoningMessageEndEvent, ReasoningMessageStartEvent,
                        ReasoningStartEvent, RunAgentInput, RunErrorEvent, RunFinishedEvent,
                        RunFinishedInterruptOutcome, RunStartedEvent, StateSnapshotEvent, SystemMessage, TextPart,
                        ToolCallResultEvent, ToolMessage, UserMessage)
from pydantic import ValidationError

from clientsdk import wire
from core.content_parts import check_parts
from core.ids import new_id
from core.problems import Problem, validation_error
from core.sanity import InputError
from runs.mcp_inputs import INTERRUPT_REASON
from runs.reasoning import (THINKING_EVENTS, ThinkingEndEvent, ThinkingStartEvent, ThinkingTextMessageContentEvent,
                            ThinkingTextMessageStartEvent)
from runs.turns import NewMessage, Turn

MAX_ID_LENGTH = 200


def check_input(run_input: RunAgentInput, *, max_messages: int) -> None:
    """Limits the models cannot express: id lengths and the history's size (413 over the limit)."""
    for name, value in (("threadId", run_input.thread_id), ("runId", run_input.run_id)):
        if not value.strip() or len(value) > MAX_ID_LENGTH:
            raise validation_error(f"{name} must be 1 to {MAX_ID_LENGTH} characters.", field=name)
    if len(run_input.messages) > max_messages:
        raise Problem(413, "PAYLOAD_TOO_LARGE",
                      f"The history has {len(run_input.messages)} messages; at most {max_messages} are accepted.",
                      field="messages", maxMessages=max_messages)
    for index, message in enumerate(run_input.messages):
        if not message.id or len(message.id) > MAX_ID_LENGTH:
            raise validation_error(f"A message id must be 1 to {MAX_ID_LENGTH} characters.",
                                   field=f"messages[{index}].id")


def forwarded_user_key(run_input: RunAgentInput) -> object:
    props = run_input.forwarded_props
    return props.get("userKey") if isinstance(props, dict) else None


def client_tools(run_input: RunAgentInput) -> list[wire.ClientTool]:
    """The request's `tools` as client tools (the application runs them); 400 naming a bad one."""
    tools = []
    for index, tool in enumerate(run_input.tools or []):
        data: dict[str, Any] = {"name": tool.name, "description": tool.description}
        if tool.parameters is not None:
            data["inputSchema"] = tool.parameters
        try:
            tools.append(wire.ClientTool.model_validate(data))
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            name = "parameters" if error["loc"][0] in ("inputSchema", "input_schema") else error["loc"][0]
            raise validation_error(f"tools[{index}].{name}: {error['msg']}", field=f"tools[{index}].{name}") from None
    return tools


def state_is_empty(state: Any) -> bool:
    """No state, or `{}`: what `HttpAgent` sends from a fresh agent (after a reload, say), which must not
    wipe the thread's stored state; the stored one is sent back instead (docs/protocol.md#the-ag-ui-endpoint)."""
    return state is None or state == {}


def model_context(run_input: RunAgentInput, state: Any) -> dict[str, Any] | None:
    """The `context` items (and the shared state, when there is one) as the turn's additional context."""
    context: dict[str, Any] = {}
    if run_input.context:
        context["context"] = [{"description": c.description, "value": c.value} for c in run_input.context]
    if state not in (None, {}, []):
        context["state"] = state
    return context or None


def plan_turn(run_input: RunAgentInput, *, known_ids: set[str], answered_call_ids: set[str]) -> Turn:
    """Sorts the client's history: ids already stored are skipped, results of calls already answered
    are history too; the rest is new. Raises 400 for what cannot be stored (see `_new_message`)."""
    turn = Turn()
    for index, message in enumerate(run_input.messages):
        if message.id in known_ids:
            continue
        if isinstance(message, ToolMessage):
            if message.tool_call_id in answered_call_ids:
                continue  # a result this server stored (or a server tool's, echoed back by the client)
            # Duplicates by call id collapse, the last one wins (as on /v1).
            turn.results[message.tool_call_id] = _tool_result(message, index)
            continue
        new = _new_message(message, index)
        if new is not None:
            turn.messages.append(new)
    for entry in run_input.resume or []:
        # An interrupt's answer (runs/mcp_inputs.py): a request for input's `{"action", "content"}` (or
        # the content alone), a client tool call's result; a cancelled interrupt is a cancelled answer.
        if entry.interrupt_id in answered_call_ids:
            continue
        value = entry.payload if entry.status == "resolved" else {"action": "cancel"}
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        turn.results[entry.interrupt_id] = NewMessage("tool", [
            {"type": "tool_result", "toolUseId": entry.interrupt_id, "content": [{"type": "text", "text": text}]}])
    return turn


def _new_message(message: Any, index: int) -> NewMessage | None:
    where = f"messages[{index}]"
    if isinstance(message, UserMessage):
        content = content_blocks(message.content, f"{where}.content")
        if not content:
            raise validation_error("A user message must not be empty.", field=f"{where}.content")
        return NewMessage("user", content, message.id, message.metadata)
    if isinstance(message, (SystemMessage, DeveloperMessage)):
        return NewMessage("system", content_blocks(message.content, f"{where}.content"), message.id)
    if isinstance(message, AssistantMessage):
        if message.tool_calls:
            # Calls this server made are stored under their message's id; others were never offered.
            raise validation_error("Only this server's own assistant messages may carry tool calls.",
                                   field=f"{where}.toolCalls")
        return NewMessage("assistant", content_blocks(message.content or "", f"{where}.content"), message.id)
    return None  # activity and reasoning messages are the client's own display material


def _tool_result(message: ToolMessage, index: int) -> NewMessage:
    content = content_blocks(message.content, f"messages[{index}].content")
    if message.error and not content:
        content = [{"type": "text", "text": message.error}]
    block: dict[str, Any] = {"type": "tool_result", "toolUseId": message.tool_call_id, "content": content}
    if message.error:
        block["isError"] = True
    return NewMessage("tool", [block], message.id, message.metadata)


def check_media(run_input: RunAgentInput) -> None:
    """Checks the image, audio, video and document parts of the input's messages as /v1 checks its
    resource parts (core/content_parts.py: strict base64, bytes of the named type, http(s) URLs only,
    supported types only), so the same parts reach the model (runs/media.py). CPU work on up to
    MAX_REQUEST_BYTES: the caller runs it off the event loop. Raises InputError (400) naming the
    part in AG-UI's terms (`messages[0].content[1].source.value`)."""
    for index, message in enumerate(run_input.messages):
        content = getattr(message, "content", None)
        if not isinstance(content, list) or all(isinstance(part, TextPart) for part in content):
            continue
        where = f"messages[{index}].content"
        try:
            check_parts(content_blocks(content, where), where)
        except InputError as error:
            field, detail = error.field, error.detail
            for ours, theirs in _FIELD_NAMES:
                field, detail = field.replace(ours, theirs), detail.replace(ours, theirs)
            raise InputError(field, detail) from None


# /v1's names of a resource's members → AG-UI's names of a part's source members.
_FIELD_NAMES = ((".resource.blob", ".source.value"), (".resource.uri", ".source.value"),
                (".resource.mimeType", ".source.mimeType"), (".resource", ".source"))


def content_blocks(content: str | list[Any], where: str) -> list[dict[str, Any]]:
    """AG-UI content (a string or parts) → the thread's text and resource blocks."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks = []
    for index, part in enumerate(content):
        if isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.text})
            continue
        source = getattr(part, "source", None)
        if source is None:
            raise validation_error("Unsupported content part.", field=f"{where}[{index}]")
        resource: dict[str, Any] = {"name": f"{part.type} part"}
        if source.type == "data":
            resource["blob"] = source.value
        else:
            resource["uri"] = source.value  # a URL, or a provider's file handle
        if getattr(source, "mime_type", None):
            resource["mimeType"] = source.mime_type
        blocks.append({"type": "resource", "resource": resource})
    return blocks


def result_message_id(tool_call_id: str) -> str:
    """The id an AG-UI client gives a server tool's result (its TOOL_CALL_RESULT `messageId`).

    The /v1 stream names the assistant message there; an AG-UI client files the result as a message
    of its own under that id, so it gets one distinct from the assistant message's.
    """
    return f"{tool_call_id}.result"


def speaks_1_0(run_input: RunAgentInput) -> bool:
    """Whether the client speaks AG-UI 1.0 or later: it says so in `protocolVersion` ("1.0").

    Clients of the 0.0.x series send no version, and their schemas are strict about what 1.0 added:
    `@ag-ui/client` 0.0.59 (pinned by CopilotKit's runtime 1.75.0) throws on RUN_FINISHED's
    `outcome.pendingToolCallIds`, so one such field would fail the whole run on the client.
    """
    version = run_input.protocol_version
    if not version:
        return False
    major = version.split(".", 1)[0]
    return not major.isdigit() or int(major) >= 1


async def agui_events(events: AsyncIterator[BaseEvent], *, thread_id: str, run_id: str,
                      state: Any, version_1_0: bool = True) -> AsyncIterator[BaseEvent]:
    """The advance loop's events as a generic AG-UI client of that protocol version expects them.

    A 1.0 client gets RUN_FINISHED's `outcome` (with the pending client tool calls) and reasoning as
    REASONING_*; a 0.0.x client (`version_1_0` False) gets RUN_FINISHED without `outcome` (it reads
    the pending calls from the tool calls it saw) and reasoning as THINKING_*, which every 0.0.x knows.
    """
    reasoning = _ReasoningIds()
    interrupts: list[Interrupt] = []
    async for event in events:
        if isinstance(event, RunStartedEvent):
            yield RunStartedEvent(thread_id=thread_id, run_id=run_id)
            yield StateSnapshotEvent(snapshot=state if state is not None else {})
        elif isinstance(event, RunFinishedEvent):
            outcome = event.outcome if version_1_0 else None
            if outcome is not None and interrupts:
                outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
            yield RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=outcome)
        elif isinstance(event, CustomEvent) and event.name == wire.AWAITING_INPUT and (event.value or {}).get(
                "inputRequests"):
            # A pause on MCP tools' requests for input: a 1.0 client gets them as interrupts (answered by
            # `resume` entries or tool messages, by id), with the client tool calls pending beside them.
            interrupts = _interrupts(event.value)
        elif isinstance(event, RunErrorEvent):
            # Without Tambo's extra members, which AG-UI clients strip with a warning.
            yield RunErrorEvent(message=event.message, code=event.code)
        elif isinstance(event, CustomEvent):
            # Tambo's own: components are not offered on this route, and `awaiting_input` says what
            # RUN_FINISHED's outcome (`pendingToolCallIds`) already says.
            continue
        elif isinstance(event, ToolCallResultEvent):
            yield event.model_copy(update={"message_id": result_message_id(event.tool_call_id)})
        elif isinstance(event, THINKING_EVENTS):
            # @tambo-ai/client reads THINKING_*; AG-UI 1.0 names them REASONING_*, with ids.
            yield reasoning.event(event) if version_1_0 else event
        else:
            yield event


def _interrupts(value: dict[str, Any]) -> list[Interrupt]:
    requests = {r["toolCallId"]: r for r in value["inputRequests"]}
    out = []
    for call in value.get("pendingToolCalls") or []:
        request = requests.get(call["toolCallId"])
        if request is None:
            out.append(Interrupt(id=call["toolCallId"], reason="tool_call", tool_call_id=call["toolCallId"],
                                 metadata={"toolName": call["toolName"], "arguments": call["arguments"]}))
            continue
        metadata = {k: request[k] for k in ("serverName", "toolName", "mcpToolCallId", "mode", "url", "elicitationId")
                    if k in request}
        out.append(Interrupt(id=call["toolCallId"], reason=INTERRUPT_REASON, message=request.get("message"),
                             tool_call_id=call["toolCallId"], response_schema=request.get("requestedSchema"),
                             metadata=metadata))
    return out


class _ReasoningIds:
    """THINKING_* → AG-UI 1.0's REASONING_*: one span per THINKING_START…THINKING_END, one reasoning
    message per block, each with an id of its own (the client files the blocks as `reasoning` messages)."""

    def __init__(self) -> None:
        self.span = ""
        self.message = ""

    def event(self, event: BaseEvent) -> BaseEvent:
        if isinstance(event, ThinkingStartEvent):
            self.span = new_id("rsn")
            return ReasoningStartEvent(message_id=self.span)
        if isinstance(event, ThinkingEndEvent):
            return ReasoningEndEvent(message_id=self.span)
        if isinstance(event, ThinkingTextMessageStartEvent):
            self.message = new_id("rsnmsg")
            return ReasoningMessageStartEvent(message_id=self.message, role="reasoning")
        if isinstance(event, ThinkingTextMessageContentEvent):
            return ReasoningMessageContentEvent(message_id=self.message, delta=event.delta)
        return ReasoningMessageEndEvent(message_id=self.message)
