"""Kept MCP sessions: one per (event loop, MCP server), reused by every call and listing (docs/protocol.md#design-for-scale).

`tools.mcp_client.call_tool` connects, calls and disconnects: for a stdio server that is a process
started per call. `McpSessions.call_tool` instead keeps one session per server open while it is in
use and closes it after `idle_timeout` seconds without a call. The `mcp` SDK's session lives in
anyio scopes that must be entered and left by one task, so each session is owned by a task of its
own (started in a fresh context, not the caller's) that takes calls from a queue, one at a time:
calls to one server never run concurrently, which bounds what a server is asked at once. Tool
listings go through the same session (`list_tools`), so a stdio server is one process per event loop
whatever the load: listings and calls included. A call
that fails with anything but the tool's own error result (a timeout, a lost connection, a crashed
server) closes the session; the next call starts a new one.

A server behind OAuth is connected per call instead (tools/mcp_vault.py): each connection reads its
user's grant from the vault, so a revoked grant is never used by a session opened before.
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import Any

from django.conf import settings
from mcp import MCPError
from mcp.types import CONNECTION_CLOSED
from opentelemetry import context as otel_context

from tools.mcp_client import (McpResult, McpServerConfig, McpToolList, _connect, call_outcome, call_tool,
                              list_tools, listing_outcome, tools_of)
from tools.mcp_input import Asker, refuse_elicitation

logger = logging.getLogger(__name__)


class _Session:
    def __init__(self, config: McpServerConfig, idle_timeout: float):
        self.config = config
        self.idle_timeout = idle_timeout
        self.calls: asyncio.Queue = asyncio.Queue()
        self.ending = False  # set as soon as the session will take no more calls
        # The running call's elicitations (tools/mcp_input.py): calls run one at a time, so the
        # session's one callback hands each to the call it belongs to.
        self.asker: Asker | None = None
        self.task = asyncio.get_running_loop().create_task(self._own(), context=contextvars.Context())

    @property
    def alive(self) -> bool:
        return not self.ending and not self.task.done()

    def close(self) -> None:
        self.ending = True
        self.task.cancel()

    async def _elicit(self, context: Any, params: Any) -> Any:
        asker = self.asker
        return await (asker.callback(context, params) if asker is not None else refuse_elicitation(context, params))

    async def _own(self) -> None:
        try:
            async with _connect(self.config, elicitation=self._elicit) as client:
                while True:
                    try:
                        job, future = await asyncio.wait_for(self.calls.get(), self.idle_timeout)
                    except asyncio.TimeoutError:
                        self.ending = True
                        return
                    if future.done():
                        continue  # its caller gave up (timed out) before the call started
                    try:
                        result = await job(client)
                    except MCPError as exc:
                        if not future.done():
                            future.set_exception(exc)
                        if exc.code == CONNECTION_CLOSED:
                            self.ending = True
                            raise  # the server went away: end the session
                        continue  # the server answered: the session stays usable
                    except Exception as exc:  # the connection is unusable: end the session
                        self.ending = True
                        if not future.done():
                            future.set_exception(exc)
                        raise
                    if not future.done():
                        future.set_result(result)
        except Exception:
            logger.info("MCP session to %r ended", self.config.name, exc_info=True)
        finally:
            self.ending = True
            while not self.calls.empty():
                _, future = self.calls.get_nowait()
                if not future.done():
                    future.set_exception(ConnectionError("The MCP session ended."))


class McpSessions:
    """The kept sessions of one event loop."""

    def __init__(self, *, idle_timeout: float = 300.0):
        self.idle_timeout = idle_timeout
        self._sessions: dict[McpServerConfig, _Session] = {}

    def _session(self, config: McpServerConfig) -> _Session:
        session = self._sessions.get(config)
        if session is None or not session.alive:
            session = self._sessions[config] = _Session(config, self.idle_timeout)
        return session

    async def call_tool(self, config: McpServerConfig, tool_name: str, arguments: dict[str, Any], *,
                        timeout: float, answers: list[dict[str, Any]] | None = None) -> McpResult:
        """As tools.mcp_client.call_tool (never raises for a failure of the server or the tool),
        on the server's kept session."""
        if config.auth != "none":
            return await call_tool(config, tool_name, arguments, timeout=timeout, answers=answers)
        asker = Asker(answers=list(answers or ()))
        session_of: list[_Session] = []
        # The call is made by the session's task, in a context of its own: it is made under the caller's
        # OpenTelemetry context, so the package puts the caller's trace context (the run's span) in the
        # request's `_meta` (`traceparent`, `tracestate`: SEP-414), not a trace of its own.
        trace_context = otel_context.get_current()

        async def job(client: Any) -> Any:
            session = session_of[0]
            session.asker = asker
            token = otel_context.attach(trace_context)
            try:
                return await client.call_tool(tool_name, arguments)
            finally:
                otel_context.detach(token)
                session.asker = None

        session, future, hung = self._submit(config, job)
        session_of.append(session)
        return await call_outcome(config, tool_name, lambda: asyncio.shield(future), timeout=timeout,
                                  on_timeout=hung, asker=asker)

    async def list_tools(self, config: McpServerConfig, *, timeout: float) -> McpToolList:
        """As tools.mcp_client.list_tools (raises McpClientError), on the server's kept session."""
        if config.auth != "none":
            return await list_tools(config, timeout=timeout)
        session, future, hung = self._submit(config, tools_of)
        return await listing_outcome(config, lambda: asyncio.shield(future), timeout=timeout, on_timeout=hung)

    def _submit(self, config: McpServerConfig, job: Any) -> tuple[_Session, asyncio.Future, Any]:
        session = self._session(config)
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        session.calls.put_nowait((job, future))

        def hung() -> None:
            future.cancel()
            session.close()  # a server that hangs is restarted for the next call

        return session, future, hung

    def close_all(self) -> None:
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()


    async def aclose(self) -> None:
        """Closes every session and waits for them to end (a stdio server's process exits)."""
        tasks = [session.task for session in self._sessions.values()]
        self.close_all()
        await asyncio.gather(*tasks, return_exceptions=True)


_by_loop: dict[asyncio.AbstractEventLoop, McpSessions] = {}


async def sessions_close() -> None:
    """Closes the kept sessions of the running event loop (at the process's shutdown)."""
    kept = _by_loop.pop(asyncio.get_running_loop(), None)
    if kept is not None:
        await kept.aclose()


def sessions() -> McpSessions:
    """The kept sessions of the running event loop (a session belongs to the loop that opened it)."""
    loop = asyncio.get_running_loop()
    for other in [other for other in _by_loop if other.is_closed()]:
        del _by_loop[other]
    if loop not in _by_loop:
        _by_loop[loop] = McpSessions(idle_timeout=settings.MCP_SESSION_IDLE_SECONDS)
    return _by_loop[loop]
