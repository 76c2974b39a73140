"""An MCP tool's request for the user's input, turned into a pause of the run (docs/tools.md#input-requests).

Both protocol eras reach the client's one elicitation callback: a session-era server sends
`elicitation/create` during the call, and the `mcp` package answers a 2026-07-28 server's
`input_required` result through the same callback before retrying the call. Nothing here holds the
call open while a person answers: the callback answers from the answers already given (in order: the
first elicitation of the call gets the first answer), and the first elicitation without one is
refused and recorded, which ends the call. The run then pauses with that request
(runs/mcp_inputs.py), and once the app answers, the whole tool call is made again with one answer
more. A tool that asks before it acts is therefore made again harmlessly; one that acts, then asks,
acts again (say so in its `idempotentHint`, or ask first).

Django-free, like tools/mcp_client.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp_types import ElicitRequestURLParams, ElicitResult, ErrorData

__all__ = ["Asker", "InputRequest", "MAX_INPUT_ROUNDS", "answer_normalised"]

# A tool that asks for more than this many answers in one call gets an error result instead: the
# `mcp` package's own cap on input_required rounds, and what keeps a looping server from pausing forever.
MAX_INPUT_ROUNDS = 10

# The JSON-RPC error the server's elicitation gets while the user is asked (the call is made again).
_PENDING_CODE = -32000
_PENDING_MESSAGE = "The user is asked for this input; the tool call will be made again with the answer."

ACTIONS = ("accept", "decline", "cancel")


@dataclass(frozen=True)
class InputRequest:
    """What the server asked: a form (`requested_schema`, a JSON Schema object) or a URL to open."""

    message: str
    requested_schema: dict[str, Any] | None = None
    mode: str = "form"
    url: str | None = None
    elicitation_id: str | None = None

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"message": self.message, "mode": self.mode}
        if self.requested_schema is not None:
            out["requestedSchema"] = self.requested_schema
        if self.url is not None:
            out["url"] = self.url
        if self.elicitation_id is not None:
            out["elicitationId"] = self.elicitation_id
        return out


@dataclass
class Asker:
    """One tool call's elicitations: answered from `answers` in order; the first one past them is kept
    in `request` and refused."""

    answers: list[dict[str, Any]] = field(default_factory=list)
    asked: int = 0
    request: InputRequest | None = None

    async def callback(self, context: Any, params: Any) -> ElicitResult | ErrorData:
        index, self.asked = self.asked, self.asked + 1
        if index < len(self.answers):
            return ElicitResult(**self.answers[index])
        if self.request is None:
            self.request = _request_of(params)
        return ErrorData(code=_PENDING_CODE, message=_PENDING_MESSAGE)


async def refuse_elicitation(context: Any, params: Any) -> ErrorData:
    """The callback outside a tool call (a listing): nobody to ask."""
    return ErrorData(code=_PENDING_CODE, message="No user can answer this request.")


def _request_of(params: Any) -> InputRequest:
    if isinstance(params, ElicitRequestURLParams):
        return InputRequest(message=params.message, mode="url", url=str(params.url),
                            elicitation_id=params.elicitation_id)
    schema = getattr(params, "requested_schema", None)
    return InputRequest(message=params.message, requested_schema=dict(schema) if schema is not None else None)


def answer_normalised(value: Any) -> dict[str, Any]:
    """The app's answer as an elicitation result: `{"action": "accept", "content": {...}}`,
    `{"action": "decline"}` or `{"action": "cancel"}`. An object without `action` is the accepted
    content; anything else is a cancel (the app could not ask)."""
    if isinstance(value, dict) and value.get("action") in ACTIONS:
        answer: dict[str, Any] = {"action": value["action"]}
        if value["action"] == "accept" and isinstance(value.get("content"), dict):
            answer["content"] = value["content"]
        return answer
    if isinstance(value, dict):
        return {"action": "accept", "content": value}
    return {"action": "cancel"}
