"""The wire shapes of the v1 API, declared once.

The server validates request bodies and renders answers with these models; the Python client
builds its request bodies and parses answers with the same ones. Field names are snake_case in
Python and camelCase on the wire. This module imports only pydantic (no Django, no requests), so
the server imports it without the client's HTTP layer and the client uses it anywhere.
"""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def wire(self) -> dict[str, Any]:
        """The JSON-ready dict: camelCase keys, absent values omitted (docs/protocol.md#endpoints)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class RequestModel(WireModel):
    # Requests are validated strictly: "5" is not a number and 1 is not a string. Unknown fields are
    # ignored (docs/protocol.md#starting-a-run) so newer clients keep working.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", strict=True)

    @classmethod
    def body(cls, **fields: Any) -> dict[str, Any]:
        """The JSON body a client sends: `fields` by their Python names (None means absent; nested
        values may be models or camelCase wire dicts), validated as the server validates it.

        Raises pydantic.ValidationError (a ValueError) for a body the server would refuse.
        """
        return cls.model_validate({name: value for name, value in fields.items() if value is not None}).wire()


# --- Tambo's own AG-UI events (CUSTOM events, docs/protocol.md#the-event-stream and #components) ----------------------

AWAITING_INPUT = "tambo.run.awaiting_input"
# A run that needs its user's OAuth authorisation of protected MCP servers first (docs/protocol.md).
MCP_AUTHORIZATION_REQUIRED = "tambo.mcp.authorization_required"
# The client tool an MCP tool's request for input is asked through (docs/protocol.md#the-event-stream):
# the app registers a tool of this name, which the model is never offered; its result is the answer.
MCP_INPUT_TOOL = "tambo_mcp_input"
# A run another server process took over (docs/operations.md#takeover): the step in flight goes on from
# what the client saw of it, under the same message id.
RUN_TAKEOVER = "tambo.run.takeover"
COMPONENT_START = "tambo.component.start"
COMPONENT_PROPS_DELTA = "tambo.component.props_delta"
COMPONENT_END = "tambo.component.end"
# Resumable runs (docs/protocol.md#resumable-runs): the last event of a reader that fell behind, with no `id:` line;
# `value.lastEventId` is where to resume.
STREAM_LAGGED = "tambo.stream.lagged"


# --- Content blocks --------------------------------------------------------------------------------

class Resource(WireModel):
    uri: str | None = None
    name: str | None = None
    description: str | None = None
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None
    annotations: dict[str, Any] | None = None


class TextBlock(WireModel):
    type: Literal["text"] = "text"
    text: str


class ResourceBlock(WireModel):
    type: Literal["resource"] = "resource"
    resource: Resource


class ToolUseBlock(WireModel):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: Any = None


class ToolResultBlock(WireModel):
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: list[Annotated[Union[TextBlock, ResourceBlock], Field(discriminator="type")]] = []
    is_error: bool | None = None


class ComponentBlock(WireModel):
    type: Literal["component"] = "component"
    id: str
    name: str
    props: dict[str, Any] = {}
    state: dict[str, Any] | None = None


ContentBlock = Annotated[
    Union[TextBlock, ResourceBlock, ToolUseBlock, ToolResultBlock, ComponentBlock],
    Field(discriminator="type"),
]


# --- Answers ---------------------------------------------------------------------------------------

class LastRunError(WireModel):
    code: str | None = None
    message: str


class Thread(WireModel):
    id: str
    name: str | None = None
    user_key: str
    run_status: Literal["idle", "waiting", "streaming"]
    current_run_id: str | None = None
    status_message: str | None = None
    last_run_cancelled: bool | None = None
    last_run_error: LastRunError | None = None
    pending_tool_call_ids: list[str] | None = None
    last_completed_run_id: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: datetime
    updated_at: datetime


class Message(WireModel):
    id: str
    role: Literal["user", "assistant", "system"]
    content: list[ContentBlock]
    created_at: datetime
    metadata: dict[str, Any] | None = None
    parent_message_id: str | None = None
    is_cancelled: bool | None = None
    # The model's reasoning before the answer, as @tambo-ai/client names it (docs/models.md).
    reasoning: list[str] | None = None
    reasoning_duration_ms: int | None = Field(default=None, alias="reasoningDurationMS")


class ThreadWithMessages(Thread):
    messages: list[Message] = []


class ThreadPage(WireModel):
    threads: list[Thread]
    next_cursor: str | None = None
    has_more: bool


class MessagePage(WireModel):
    messages: list[Message]
    next_cursor: str | None = None
    has_more: bool


class CancelResult(WireModel):
    run_id: str
    # "cancelled": the run's end and its partial message are stored; "cancelling" (HTTP 202): the
    # cancel is recorded but the run had not ended within the server's wait (docs/protocol.md#the-event-stream).
    status: Literal["cancelled", "cancelling"]


class ComponentStateResult(WireModel):
    state: dict[str, Any]


class RunError(WireModel):
    code: str | None = None
    message: str | None = None


class RunInfo(WireModel):
    """A run as `GET /v1/threads/{threadId}/runs/{runId}` shows it, and the answer (202) of a run
    started with `background: true` (docs/protocol.md#background-runs)."""

    id: str
    thread_id: str
    status: Literal["waiting", "streaming", "awaiting_input", "completed", "cancelled", "failed"]
    # Where to read its events (docs/protocol.md#resumable-runs).
    events_url: str
    previous_run_id: str | None = None
    model: str | None = None
    error: RunError | None = None
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None


# --- Requests --------------------------------------------------------------------------------------

class InTextBlock(RequestModel):
    type: Literal["text"]
    text: str


class InResourceBlock(RequestModel):
    type: Literal["resource"]
    resource: Resource


class InToolResultBlock(RequestModel):
    type: Literal["tool_result"]
    # The server adds the length of the column that stores it (runs/bodies.py).
    tool_use_id: Annotated[str, StringConstraints(min_length=1)]
    content: list[Annotated[Union[InTextBlock, InResourceBlock], Field(discriminator="type")]] = []
    is_error: bool | None = None


InputBlock = Annotated[Union[InTextBlock, InResourceBlock, InToolResultBlock], Field(discriminator="type")]


class InitialMessage(RequestModel):
    role: Literal["user", "assistant", "system"]
    content: Annotated[list[Annotated[Union[InTextBlock, InResourceBlock], Field(discriminator="type")]],
                       Field(min_length=1)]
    metadata: dict[str, Any] | None = None


class CreateThreadBody(RequestModel):
    user_key: str | None = None
    metadata: dict[str, Any] | None = None
    initial_messages: list[InitialMessage] | None = None


class UpdateThreadBody(RequestModel):
    name: str | None = None  # the server adds its column's length (threads/bodies.py)
    metadata: dict[str, Any] | None = None


class InputMessage(RequestModel):
    role: Literal["user"]
    content: Annotated[list[InputBlock], Field(min_length=1)]
    metadata: dict[str, Any] | None = None
    additional_context: Any = None


class AvailableComponent(RequestModel):
    name: Annotated[str, StringConstraints(pattern=r"^[a-zA-Z0-9_-]{1,64}$")]
    description: str = ""
    props_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    state_schema: dict[str, Any] | None = None


class ClientTool(RequestModel):
    # Any non-empty name (browser MCP tools are named like `github__search.repos`): providers are
    # sent a safe alias (providers/tool_names.py), the client always sees its own name.
    name: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    output_schema: dict[str, Any] | None = None
    strict: bool | None = None
    max_calls: Annotated[int, Field(ge=1)] | None = None


class NamedToolChoice(RequestModel):
    name: str


class CreateRunBody(RequestModel):
    message: InputMessage
    user_key: str | None = None
    available_components: list[AvailableComponent] | None = None
    tools: list[ClientTool] | None = None
    tool_choice: Literal["auto", "required", "none"] | NamedToolChoice | None = None
    # The server adds its own limits (its columns' lengths, the most tokens: runs/bodies.py).
    previous_run_id: str | None = None
    model: str | None = None
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    temperature: Annotated[float, Field(ge=0, le=2)] | None = None
    run_metadata: dict[str, Any] | None = None
    # "continue": the run goes on to its end when the client goes away; its events can be read
    # again from GET …/runs/{runId}/events (docs/protocol.md#resumable-runs). "cancel" (or none: the reference's behaviour) cancels it.
    on_disconnect: Literal["cancel", "continue"] | None = None
    # True: the start answers at once (202, a RunInfo) and the run goes on with no reader; follow it
    # with GET …/runs/{runId}/events (docs/protocol.md#background-runs). The header `Prefer: respond-async` says the same.
    background: bool | None = None


class NewThreadSpec(RequestModel):
    user_key: str | None = None
    metadata: dict[str, Any] | None = None
    initial_messages: list[InitialMessage] | None = None


class CreateThreadWithRunBody(CreateRunBody):
    thread: NewThreadSpec | None = None
    thread_metadata: dict[str, Any] | None = None


class ComponentStateBody(RequestModel):
    user_key: str | None = None
    state: dict[str, Any] | None = None
    patch: list[dict[str, Any]] | None = None


# --- Thread names and suggestions (docs/protocol.md#thread-names-and-suggestions) -------------------------------------

class NamedThread(Thread):
    """The answer of `POST /threads/{threadId}/generate-name`: a Thread with its project, as the SDK reads it."""

    project_id: str


class Suggestion(WireModel):
    id: str
    message_id: str
    title: str
    description: str
    detailed_suggestion: str
    metadata: dict[str, Any] | None = None


class SuggestionPage(WireModel):
    suggestions: list[Suggestion]
    has_more: bool
    next_cursor: str | None = None


class CreateSuggestionsBody(RequestModel):
    user_key: str | None = None
    max_suggestions: Annotated[int, Field(ge=1, le=10)] = 3
    available_components: list[AvailableComponent] | None = None
