"""`Client`: the resources of the v1 API plus the client-tool loop.

    client = Client("http://localhost:8000", api_key="tk_...", user_key="alice")
    client.register_tool("local_time", local_time, "The user's local time", {"type": "object"})
    print(client.run("What time is it?").text())

The client is synchronous and not thread-safe, except `RunStream.cancel()`, which may be called
from another thread. It imports no Django and nothing from the server's packages.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import requests
from pydantic import BaseModel

from . import wire
from ._base import HTTPCore
from ._tools import RegisteredTool, tool_result_block
from .attachments import Attachment, with_attachments
from .snapshot import PendingToolCall
from .resources import Components, Runs, Threads, run_body, user_message
from .resume import DEFAULT_RESUME_ATTEMPTS
from .tool_loop import RunStream

if TYPE_CHECKING:  # pragma: no cover
    from .mcp import MCPConnection

__all__ = ["Client"]

logger = logging.getLogger("clientsdk")

BeforeRunHook = Callable[[dict[str, Any]], "dict[str, Any] | None"]


class Client:
    def __init__(
        self,
        base_url: str,
        api_key: str,
        user_key: str,
        *,
        timeout: float = 60.0,
        max_retries: int = 2,
        session: requests.Session | None = None,
    ) -> None:
        """`timeout` bounds each request and, on a stream, each wait for the next bytes.
        `max_retries` bounds retries of non-streaming calls (connection errors, 429, 5xx)."""
        if not user_key or not user_key.strip():
            raise ValueError("user_key must be a non-empty string")
        self.user_key = user_key
        self._core = HTTPCore(base_url, api_key, timeout=timeout, max_retries=max_retries, session=session)
        self.threads = Threads(self._core, user_key)
        self.runs = Runs(self._core, user_key)
        self.components = Components(self._core, user_key)
        self._tools: dict[str, RegisteredTool] = {}
        self._components: dict[str, wire.AvailableComponent] = {}
        self._context_helpers: dict[str, Callable[[], Any]] = {}
        self._before_run: list[BeforeRunHook] = []
        self._mcp_connections: list[MCPConnection] = []

    @property
    def base_url(self) -> str:
        return self._core.base_url

    # --- registration -----------------------------------------------------------------------

    def register_tool(
        self,
        name: str,
        fn: Callable[..., Any],
        description: str | None = None,
        input_schema: dict[str, Any] | type[BaseModel] | None = None,
        *,
        streamable: bool = False,
    ) -> Callable[..., Any]:
        """Offer `fn` to the model as tool `name`; returns `fn`.

        `input_schema` is a JSON Schema dict, or a pydantic model class (then `fn` receives one
        validated instance; otherwise the argument object's members as keyword arguments).
        `description` defaults to the function's docstring. A streamable tool is also called with
        partial arguments while they stream (throttled; errors are logged and ignored); the call
        whose result goes back to the model still happens once the arguments are complete.
        """
        self._tools[name] = RegisteredTool.build(name, fn, description, input_schema, streamable)
        return fn

    def unregister_tool(self, name: str) -> None:
        self._tools.pop(name, None)

    def get_tool(self, name: str) -> RegisteredTool | None:
        return self._tools.get(name)

    @property
    def tools(self) -> list[str]:
        return list(self._tools)

    def register_component(
        self, name: str, description: str, props_schema: dict[str, Any] | type[BaseModel],
        state_schema: dict[str, Any] | None = None,
    ) -> None:
        """Offer a component the model can render (sent as `availableComponents`)."""
        if isinstance(props_schema, type) and issubclass(props_schema, BaseModel):
            props_schema = props_schema.model_json_schema()
        self._components[name] = wire.AvailableComponent(name=name, description=description,
                                                         props_schema=props_schema, state_schema=state_schema)

    def add_context_helper(self, name: str, fn: Callable[[], Any]) -> None:
        """`fn()` is called before every request of a run, continuations included; its value is sent
        as `message.additionalContext[name]`. A helper that raises is logged and left out."""
        self._context_helpers[name] = fn

    def remove_context_helper(self, name: str) -> None:
        self._context_helpers.pop(name, None)

    def before_run(self, hook: BeforeRunHook) -> BeforeRunHook:
        """Register `hook(body)`, called with each run request's wire body just before it is sent
        (first request and continuations). It may change the body in place or return a new one."""
        self._before_run.append(hook)
        return hook

    # --- runs with the tool loop ------------------------------------------------------------

    def run(
        self,
        message: str | list[dict[str, Any]] | dict[str, Any],
        thread_id: str | None = None,
        *,
        auto_execute_tools: bool = True,
        max_steps: int = 10,
        tool_choice: str | dict[str, Any] | None = None,
        additional_context: dict[str, Any] | None = None,
        previous_run_id: str | None = None,
        resume: bool = False,
        resume_attempts: int = DEFAULT_RESUME_ATTEMPTS,
        attachments: Iterable[Attachment] = (),
        **run_options: Any,
    ) -> RunStream:
        """Send a user message and run the tool loop; see `RunStream`.

        `attachments`: images and files sent with the message, each a path or `(bytes, mime type[, name])`
        (clientsdk/attachments.py); they follow the message's own content.

        Without `thread_id` a new thread is made (`stream.thread_id` once started). On an existing
        thread the last completed run id is looked up unless `previous_run_id` is given.
        `run_options`: `model`, `max_tokens`, `temperature`, `run_metadata`, `thread_metadata`,
        `on_disconnect` ("cancel", the server's default, or "continue": the run outlives a closed
        stream).

        `resume=True` sends `on_disconnect="continue"` and, when the connection drops while a run
        is alive, reads on from the run's events route after the last event id seen (at most
        `resume_attempts` reconnections in a row, with backoff), so each event is seen once.
        """
        options = {"tool_choice": tool_choice, "additional_context": additional_context, **run_options}
        if attachments:
            message = with_attachments(message, attachments)
        return RunStream(self, message=user_message(message), thread_id=thread_id, previous_run_id=previous_run_id,
                         auto_execute_tools=auto_execute_tools, max_steps=max_steps, run_options=options,
                         resume=resume, resume_attempts=resume_attempts)

    def join(
        self, thread_id: str, run_id: str, after: int | str | None = None, *,
        resume_attempts: int = DEFAULT_RESUME_ATTEMPTS,
    ) -> RunStream:
        """Follow run `run_id` of `thread_id`, started by this or another client (docs/protocol.md#resumable-runs).

        Yields `(event, snapshot)` like `run`: the run's events after event id `after` (all of them
        without it), then the live ones until the run ends; a dropped connection is resumed. A run
        that ended is replayed for five minutes after its end. The snapshot starts empty, so with
        `after` it holds only what came after. Joining never runs tools or continues the run: a
        pause for client tools ends the stream with `pending_tool_calls` set. `cancel()` cancels
        the run on the server; leaving a `with` block only stops reading.

        Raises (at the first `next()`) NotFoundError for an unknown, expired or other user's run,
        BadRequestError for an `after` that is not one of the run's ids, and RunError after
        yielding a RUN_ERROR.
        """
        return RunStream(self, message={}, thread_id=thread_id, previous_run_id=None, auto_execute_tools=False,
                         max_steps=0, run_options={}, resume_attempts=resume_attempts,
                         join=(run_id, None if after is None else str(after)))

    def submit_tool_results(
        self,
        thread_id: str,
        run_id: str,
        results: Mapping[str, Any],
        *,
        auto_execute_tools: bool = True,
        max_steps: int = 10,
        tool_choice: str | dict[str, Any] | None = None,
        additional_context: dict[str, Any] | None = None,
        **run_options: Any,
    ) -> RunStream:
        """Answer the pending tool calls of paused run `run_id` and continue the loop.

        `results` maps toolCallId to what the tool produced: anything a tool may return, a
        `ToolResult(content, is_error=True)`, or an exception (sent as an error result).
        """
        blocks = [tool_result_block(call_id, value) for call_id, value in results.items()]
        options = {"tool_choice": tool_choice, "additional_context": additional_context, **run_options}
        return RunStream(self, message={"role": "user", "content": blocks}, thread_id=thread_id,
                         previous_run_id=run_id, auto_execute_tools=auto_execute_tools, max_steps=max_steps,
                         run_options=options)

    def execute_tool_call(self, call: PendingToolCall) -> dict[str, Any]:
        """Run one pending call with the registered tool; return its wire `tool_result` block.

        Never raises for the tool's sake: bad JSON arguments, an unknown tool or an exception in
        the tool all become an `isError` result the model can read.
        """
        tool = self._tools.get(call.tool_name)
        if tool is None:
            return tool_result_block(call.tool_call_id, LookupError(f"tool {call.tool_name!r} is not registered on this client"))
        try:
            arguments = call.parsed_arguments()
        except ValueError as exc:
            return tool_result_block(call.tool_call_id, ValueError(f"arguments are not valid JSON: {exc}"))
        try:
            value = tool.call(arguments)
        except Exception as exc:  # the model is told; the loop goes on
            logger.info("tool %s raised %s", call.tool_name, exc.__class__.__name__, exc_info=True)
            return tool_result_block(call.tool_call_id, exc)
        return tool_result_block(call.tool_call_id, value)

    def build_run_body(
        self,
        message: dict[str, Any],
        *,
        previous_run_id: str | None,
        new_thread: bool = False,
        tool_choice: str | dict[str, Any] | None = None,
        additional_context: dict[str, Any] | None = None,
        model: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        run_metadata: dict[str, Any] | None = None,
        thread_metadata: dict[str, Any] | None = None,
        on_disconnect: str | None = None,
    ) -> dict[str, Any]:
        """The wire body of one run request, with fresh context and after the before_run hooks.

        Raises pydantic.ValidationError (a ValueError) for a body the server would refuse."""
        context = self._evaluate_context(additional_context)
        if context:
            message = {**message, "additionalContext": context}
        # Validated once, with the whole body (run_body).
        body = run_body(
            message, user_key=self.user_key, new_thread=new_thread, thread_metadata=thread_metadata,
            previous_run_id=previous_run_id, tool_choice=tool_choice, model=model, max_tokens=max_tokens,
            temperature=temperature, run_metadata=run_metadata, on_disconnect=on_disconnect,
            tools=[t.declaration() for t in self._tools.values()] or None,
            available_components=list(self._components.values()) or None,
        )
        for hook in self._before_run:
            changed = hook(body)
            if changed is not None:
                body = changed
        return body

    def _evaluate_context(self, additional_context: dict[str, Any] | None) -> dict[str, Any]:
        context = dict(additional_context or {})
        for name, helper in self._context_helpers.items():
            try:
                context[name] = helper()
            except Exception:
                logger.exception("context helper %s failed; its value is left out", name)
        return context

    # --- MCP --------------------------------------------------------------------------------

    def connect_mcp_server(
        self,
        *,
        command: str | None = None,
        args: list[str] | None = None,
        env: dict[str, str] | None = None,
        url: str | None = None,
        headers: dict[str, str] | None = None,
        prefix: str = "",
        timeout: float = 30.0,
        mode: str = "auto",
    ) -> MCPConnection:
        """Connect to a local MCP server (stdio `command` or streamable HTTP `url`) and register
        each of its tools as a client tool named `prefix + tool name`. Needs the `mcp` package.

        `mode` is the `mcp` client's protocol negotiation ("auto", or "legacy" for servers that
        only speak the initialize handshake, which connects faster to them). `close()` the client,
        or the returned connection, to stop a stdio server."""
        from .mcp import MCPConnection

        connection = MCPConnection.open(command=command, args=args, env=env, url=url, headers=headers,
                                          timeout=timeout, mode=mode)
        try:
            for tool in connection.list_tools():
                name = prefix + tool.name
                self.register_tool(name, connection.tool_function(tool.name), tool.description or "", tool.input_schema)
        except BaseException:
            connection.close()
            raise
        self._mcp_connections.append(connection)
        return connection

    # --- lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        for connection in self._mcp_connections:
            connection.close()
        self._mcp_connections.clear()
        self._core.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
