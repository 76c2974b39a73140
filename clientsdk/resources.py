"""One resource class per part of the v1 API; every endpoint of the spec has one method.

`userKey` goes where the spec wants it: a query parameter on GET/DELETE (and PATCH, whose table row
says query), a body field on POST. Request bodies are built from the wire models of
`clientsdk.wire`, the ones the server validates them with (so a body it would refuse fails here,
with pydantic's ValidationError, before it is sent), and answers are parsed into the models the
server renders them with.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from . import wire
from .streaming import Stream
from .wire import (
    CancelResult,
    ComponentStateResult,
    Message,
    MessagePage,
    NamedThread,
    RunInfo,
    SuggestionPage,
    Thread,
    ThreadPage,
    ThreadWithMessages,
)

if TYPE_CHECKING:  # pragma: no cover
    from ._base import HTTPCore

__all__ = ["Threads", "Messages", "Suggestions", "Runs", "Components", "run_body", "user_message"]


def _seg(value: str) -> str:
    """Quote an id for use as one path segment (ids are URL-safe, but never trust input)."""
    return quote(value, safe="")


def _drop_none(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


def user_message(
    message: str | list[dict[str, Any]] | dict[str, Any], additional_context: Any = None
) -> dict[str, Any]:
    """The wire `message` of a run request from text, a list of content blocks, or a full message
    dict (camelCase, as on the wire). Raises pydantic.ValidationError for one the server would refuse."""
    if isinstance(message, str):
        fields: dict[str, Any] = {"content": [wire.InTextBlock(type="text", text=message)]}
    elif isinstance(message, list):
        fields = {"content": message}
    else:
        fields = dict(message)
    fields.setdefault("role", "user")
    if additional_context is not None:
        fields["additional_context"] = additional_context
    return wire.InputMessage.model_validate(fields).wire()


def run_body(
    message: wire.InputMessage | dict[str, Any],
    *,
    user_key: str,
    new_thread: bool,
    thread_metadata: dict[str, Any] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """The wire body that starts a run: on a new thread (`POST /v1/threads/runs`, the thread made for
    `user_key`) or on an existing one. `fields` are the other `CreateRunBody` fields by their Python
    names (`previous_run_id`, `tools`, `tool_choice`, `model`, ...); None means absent."""
    if new_thread:
        return wire.CreateThreadWithRunBody.body(message=message, user_key=user_key,
                                                 thread=wire.NewThreadSpec(user_key=user_key),
                                                 thread_metadata=thread_metadata, **fields)
    return wire.CreateRunBody.body(message=message, user_key=user_key, **fields)


class _Resource:
    def __init__(self, core: HTTPCore, user_key: str) -> None:
        self._core = core
        self._user_key = user_key


class Messages(_Resource):
    def list(
        self, thread_id: str, *, limit: int | None = None, cursor: str | None = None, order: str | None = None
    ) -> MessagePage:
        params = _drop_none({"userKey": self._user_key, "limit": limit, "cursor": cursor, "order": order})
        return self._core.request_model("GET", f"/v1/threads/{_seg(thread_id)}/messages", MessagePage, params=params)

    def retrieve(self, thread_id: str, message_id: str) -> Message:
        path = f"/v1/threads/{_seg(thread_id)}/messages/{_seg(message_id)}"
        return self._core.request_model("GET", path, Message, params={"userKey": self._user_key})


class Suggestions(_Resource):
    """Suggested next user messages for an assistant message (docs/protocol.md#thread-names-and-suggestions)."""

    def create(self, thread_id: str, message_id: str, *, max_suggestions: int | None = None,
               available_components: list[dict[str, Any]] | None = None) -> SuggestionPage:
        """Generate suggestions with one model call, replacing the message's earlier ones."""
        body = wire.CreateSuggestionsBody.body(user_key=self._user_key, max_suggestions=max_suggestions,
                                               available_components=available_components)
        return self._core.request_model("POST", self._path(thread_id, message_id), SuggestionPage, json=body)

    def list(self, thread_id: str, message_id: str, *, limit: int | None = None,
             cursor: str | None = None) -> SuggestionPage:
        params = _drop_none({"userKey": self._user_key, "limit": limit, "cursor": cursor})
        return self._core.request_model("GET", self._path(thread_id, message_id), SuggestionPage, params=params)

    @staticmethod
    def _path(thread_id: str, message_id: str) -> str:
        return f"/v1/threads/{_seg(thread_id)}/messages/{_seg(message_id)}/suggestions"


class Threads(_Resource):
    def __init__(self, core: HTTPCore, user_key: str) -> None:
        super().__init__(core, user_key)
        self.messages = Messages(core, user_key)
        self.suggestions = Suggestions(core, user_key)

    def generate_name(self, thread_id: str) -> NamedThread:
        """Name the thread from its conversation with one model call (the path has no `/v1`)."""
        path = f"/threads/{_seg(thread_id)}/generate-name"
        return self._core.request_model("POST", path, NamedThread, params={"userKey": self._user_key})

    def list(self, *, limit: int | None = None, cursor: str | None = None) -> ThreadPage:
        params = _drop_none({"userKey": self._user_key, "limit": limit, "cursor": cursor})
        return self._core.request_model("GET", "/v1/threads", ThreadPage, params=params)

    def create(
        self, *, metadata: dict[str, Any] | None = None, initial_messages: list[dict[str, Any]] | None = None
    ) -> Thread:
        body = wire.CreateThreadBody.body(user_key=self._user_key, metadata=metadata, initial_messages=initial_messages)
        return self._core.request_model("POST", "/v1/threads", Thread, json=body)

    def retrieve(self, thread_id: str) -> ThreadWithMessages:
        path = f"/v1/threads/{_seg(thread_id)}"
        return self._core.request_model("GET", path, ThreadWithMessages, params={"userKey": self._user_key})

    def update(self, thread_id: str, *, name: str | None = None, metadata: dict[str, Any] | None = None) -> Thread:
        # userKey goes in the query (docs/protocol.md#endpoints), so the body is the update alone.
        body = wire.UpdateThreadBody.body(name=name, metadata=metadata)
        path = f"/v1/threads/{_seg(thread_id)}"
        return self._core.request_model("PATCH", path, Thread, params={"userKey": self._user_key}, json=body)

    def delete(self, thread_id: str) -> None:
        self._core.request("DELETE", f"/v1/threads/{_seg(thread_id)}", params={"userKey": self._user_key})


class Runs(_Resource):
    def create(
        self,
        message: str | list[dict[str, Any]] | dict[str, Any],
        *,
        thread_id: str | None = None,
        previous_run_id: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        available_components: list[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        additional_context: Any = None,
        model: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        run_metadata: dict[str, Any] | None = None,
        thread_metadata: dict[str, Any] | None = None,
        on_disconnect: str | None = None,
        extra_body: dict[str, Any] | None = None,
    ) -> Stream:
        """Start a run and return its event stream (not retried). Without `thread_id` a new thread
        is created; its id is `stream.thread_id` (header `X-Thread-Id`). `on_disconnect="continue"`
        lets the run go on when this stream is closed (read it again with `events`)."""
        body = run_body(user_message(message, additional_context), user_key=self._user_key,
                        new_thread=thread_id is None, thread_metadata=thread_metadata,
                        previous_run_id=previous_run_id, tools=tools, available_components=available_components,
                        tool_choice=tool_choice, model=model, max_tokens=max_tokens, temperature=temperature,
                        run_metadata=run_metadata, on_disconnect=on_disconnect)
        body.update(extra_body or {})
        return self.create_from_body(body, thread_id=thread_id)

    def create_from_body(self, body: dict[str, Any], *, thread_id: str | None) -> Stream:
        """Start a run from a ready wire body (camelCase); used by the tool loop."""
        path = "/v1/threads/runs" if thread_id is None else f"/v1/threads/{_seg(thread_id)}/runs"
        response = self._core.stream("POST", path, json=body, headers={"Accept": "text/event-stream"})
        stream = Stream(response)
        stream.thread_id = stream.thread_id or thread_id
        return stream

    def events(self, thread_id: str, run_id: str, *, after: int | str | None = None) -> Stream:
        """Read a run's events (docs/protocol.md#resumable-runs): those after event id `after` (all without it),
        then the live ones until the run ends. Not retried here (the resuming stream retries).

        Raises NotFoundError (404 RUN_NOT_FOUND) for an unknown run, another user's, or one that
        ended more than five minutes ago; BadRequestError (400) for an `after` that is not an id
        of this run."""
        path = f"/v1/threads/{_seg(thread_id)}/runs/{_seg(run_id)}/events"
        headers = {"Accept": "text/event-stream"}
        if after is not None:
            headers["Last-Event-ID"] = str(after)
        response = self._core.stream("GET", path, params={"userKey": self._user_key}, headers=headers)
        stream = Stream(response)
        stream.thread_id = stream.thread_id or thread_id
        stream.run_id = stream.run_id or run_id
        return stream

    def start_background(
        self,
        message: str | list[dict[str, Any]] | dict[str, Any],
        *,
        thread_id: str | None = None,
        previous_run_id: str | None = None,
        **fields: Any,
    ) -> RunInfo:
        """Start a background run (docs/protocol.md#background-runs): answered at once with the run, which
        goes on with no reader; follow it with `events` or `Client.join`, see it with `retrieve`.
        `fields`: the other `CreateRunBody` fields by their Python names (`tools`, `model`, ...)."""
        body = run_body(user_message(message), user_key=self._user_key, new_thread=thread_id is None,
                        previous_run_id=previous_run_id, background=True, **fields)
        path = "/v1/threads/runs" if thread_id is None else f"/v1/threads/{_seg(thread_id)}/runs"
        return self._core.request_model("POST", path, RunInfo, json=body)

    def retrieve(self, thread_id: str, run_id: str) -> RunInfo:
        """The run's status (docs/protocol.md#background-runs)."""
        path = f"/v1/threads/{_seg(thread_id)}/runs/{_seg(run_id)}"
        return self._core.request_model("GET", path, RunInfo, params={"userKey": self._user_key})

    def cancel(self, thread_id: str, run_id: str) -> CancelResult:
        path = f"/v1/threads/{_seg(thread_id)}/runs/{_seg(run_id)}"
        return self._core.request_model("DELETE", path, CancelResult, params={"userKey": self._user_key})


class Components(_Resource):
    def update_state(
        self,
        thread_id: str,
        component_id: str,
        *,
        state: dict[str, Any] | None = None,
        patch: list[dict[str, Any]] | None = None,
    ) -> ComponentStateResult:
        """Replace a component's state (`state=`) or apply a JSON Patch to it (`patch=`); exactly one."""
        if (state is None) == (patch is None):
            raise ValueError("pass exactly one of state= or patch=")
        body = wire.ComponentStateBody.body(user_key=self._user_key, state=state, patch=patch)
        path = f"/v1/threads/{_seg(thread_id)}/components/{_seg(component_id)}/state"
        return self._core.request_model("POST", path, ComponentStateResult, json=body)
