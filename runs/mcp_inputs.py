"""MCP tools' requests for input as pauses of the run (docs/protocol.md#the-event-stream, docs/tools.md#input-requests).

An MCP tool that asks the user something (tools/mcp_input.py) is asked through a synthetic client
tool call, `tambo_mcp_input` (`wire.MCP_INPUT_TOOL`), whose arguments are the request: the run
streams that call's TOOL_CALL_START/ARGS/END and pauses on it as on any client tool call. An app
using `@tambo-ai/client` registers a client tool of that name that asks the user and returns the
answer; any other client answers the call id with a tool result on the continuation (AG-UI: a `tool`
message or a `resume` entry of its interrupt). The answer is not stored as a message: the thread keeps
the pending request (`Thread.pending_inputs`, by the synthetic call's id), the continuation takes the
answer (runs/turns.py), and the run calls the MCP tool again with every answer so far before the
model is called (`inputs_retry`), storing the tool's real result under the model's own call id.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import BaseEvent, ToolCallArgsEvent, ToolCallEndEvent, ToolCallStartEvent

from clientsdk import wire
from core.ids import new_id

# The reason of an AG-UI interrupt that is an MCP tool's request for input (runs/agui/protocol.py).
INTERRUPT_REASON = "mcp_input_required"


@dataclass
class InputAsk:
    """One MCP tool call waiting on the user's answer."""

    input_call_id: str  # the synthetic `tambo_mcp_input` call the app answers
    call_id: str  # the model's call of the MCP tool, whose result the retried call stores
    name: str  # the tool as the model knows it, `<server>__<tool>`
    server: str
    arguments: dict[str, Any]
    message_id: str  # the assistant message holding the model's call
    request: dict[str, Any]  # tools/mcp_input.py InputRequest.wire()
    answers: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def new(cls, *, call_id: str, name: str, server: str, arguments: dict[str, Any], message_id: str,
            request: Any, answers: list[dict[str, Any]] | None = None) -> InputAsk:
        return cls(input_call_id=new_id("call"), call_id=call_id, name=name, server=server, arguments=arguments,
                   message_id=message_id, request=request.wire(), answers=list(answers or ()))

    def again(self, request: Any) -> InputAsk:
        """The same call asking once more (its next question), under a new synthetic call."""
        return InputAsk.new(call_id=self.call_id, name=self.name, server=self.server, arguments=self.arguments,
                            message_id=self.message_id, request=request, answers=self.answers)

    def stored(self) -> dict[str, Any]:
        return {"callId": self.call_id, "name": self.name, "server": self.server, "arguments": self.arguments,
                "messageId": self.message_id, "request": self.request, "answers": self.answers}

    @classmethod
    def of_stored(cls, input_call_id: str, entry: dict[str, Any]) -> InputAsk:
        return cls(input_call_id=input_call_id, call_id=entry["callId"], name=entry["name"],
                   server=entry.get("server", ""), arguments=entry.get("arguments") or {},
                   message_id=entry["messageId"], request=entry.get("request") or {},
                   answers=list(entry.get("answers") or ()))

    def call_arguments(self) -> dict[str, Any]:
        """The synthetic call's arguments: what the app shows the user."""
        return {"serverName": self.server, "toolName": self.name, "mcpToolCallId": self.call_id, **self.request}

    def wire(self) -> dict[str, Any]:
        """The request as `tambo.run.awaiting_input`'s `inputRequests` lists it."""
        return {"toolCallId": self.input_call_id, **self.call_arguments()}

    def pending_call(self) -> dict[str, Any]:
        return {"toolCallId": self.input_call_id, "toolName": wire.MCP_INPUT_TOOL,
                "arguments": json.dumps(self.call_arguments(), ensure_ascii=False)}

    def events(self) -> list[BaseEvent]:
        return [ToolCallStartEvent(tool_call_id=self.input_call_id, tool_call_name=wire.MCP_INPUT_TOOL,
                                   parent_message_id=self.message_id),
                ToolCallArgsEvent(tool_call_id=self.input_call_id,
                                  delta=json.dumps(self.call_arguments(), ensure_ascii=False)),
                ToolCallEndEvent(tool_call_id=self.input_call_id)]


def answer_of(result_block: dict[str, Any]) -> dict[str, Any]:
    """The app's tool result for a synthetic call as an elicitation answer (tools/mcp_input.py
    `answer_normalised`): its text is the JSON of `{"action", "content"}` (or of the content alone); an
    error result, or text that is not JSON, is a cancel."""
    from tools.mcp_input import answer_normalised  # Django-free, but imports the MCP SDK's types

    if result_block.get("isError"):
        return {"action": "cancel"}
    text = "".join(b.get("text", "") for b in result_block.get("content") or [] if b.get("type") == "text")
    try:
        value = json.loads(text)
    except ValueError:
        return {"action": "cancel"}
    return answer_normalised(value)
