"""Lend a local MCP server's tools to the model, as client tools.

The `mcp` package is asynchronous and this client is not, so an `MCPConnection` keeps one event loop
running in a daemon thread, holds the MCP session open inside it, and hands each synchronous call
over with `asyncio.run_coroutine_threadsafe`. `mcp` is imported only when a connection is opened,
so the rest of the client works without it.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

from ._tools import ToolResult

__all__ = ["MCPConnection"]


class MCPConnection:
    """One open MCP session. Use `Client.connect_mcp_server`, which opens it and registers its tools."""

    def __init__(self, timeout: float, mode: str = "auto") -> None:
        self.timeout = timeout
        # "auto" probes for a modern (2026+) server and falls back to the initialize handshake;
        # "legacy" skips the probe, which saves a round of waiting with older servers.
        self.mode = mode
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="clientsdk-mcp", daemon=True)
        self._thread.start()
        self._session: Any = None
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._main: concurrent.futures.Future[None] | None = None
        self._stop: asyncio.Event | None = None
        self._closed = False

    @classmethod
    def open(
        cls,
        *,
        command: str | None = None,
        args: list[str] | None = None,
        env: dict[str, str] | None = None,
        url: str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 30.0,
        mode: str = "auto",
    ) -> MCPConnection:
        if (command is None) == (url is None):
            raise ValueError("pass exactly one of command= (stdio) or url= (streamable HTTP)")
        connection = cls(timeout, mode)
        connection._main = asyncio.run_coroutine_threadsafe(
            connection._hold(command, args or [], env, url, headers), connection._loop
        )
        try:
            connection._ready.result(timeout)
        except BaseException:
            connection.close()
            raise
        return connection

    async def _hold(
        self, command: str | None, args: list[str], env: dict[str, str] | None, url: str | None,
        headers: dict[str, str] | None,
    ) -> None:
        """Open the session, then keep it open until close(). One task enters and leaves every
        context, because anyio's cancel scopes inside `mcp` must be left by the task that entered them."""
        import mcp
        from mcp.client.stdio import StdioServerParameters
        from mcp.client.streamable_http import streamable_http_client

        self._stop = asyncio.Event()
        try:
            async with AsyncExitStack() as stack:
                server: Any
                if command is not None:
                    server = StdioServerParameters(command=command, args=args, env=env)
                elif headers:
                    from mcp.shared._httpx_utils import create_mcp_http_client

                    http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
                    server = streamable_http_client(url, http_client=http)  # type: ignore[arg-type]
                else:
                    server = url
                self._session = await stack.enter_async_context(mcp.Client(server, mode=self.mode))
                self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    def _run(self, coro: Any) -> Any:
        if self._closed:
            coro.close()
            raise RuntimeError("the MCP connection is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(self.timeout)

    def list_tools(self) -> list[Any]:
        """All tools of the server (`mcp_types.Tool`), following pagination."""

        async def collect() -> list[Any]:
            tools: list[Any] = []
            cursor = None
            for _ in range(100):  # a server whose cursor never ends cannot hang us
                page = await self._session.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
            return tools

        return self._run(collect())

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Call a tool; its content becomes tool-result blocks, `is_error` is kept."""
        result = self._run(self._session.call_tool(name, arguments))
        blocks = [_content_block(item) for item in result.content]
        if not blocks and result.structured_content is not None:
            blocks = [{"type": "text", "text": json.dumps(result.structured_content)}]
        return ToolResult(blocks or "", is_error=bool(result.is_error))

    def tool_function(self, name: str) -> Callable[..., ToolResult]:
        def call(**arguments: Any) -> ToolResult:
            return self.call_tool(name, arguments)

        call.__name__ = name
        return call

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._main is not None:
            try:
                self._main.result(self.timeout)
            except BaseException:  # closing must not raise; the subprocess/connection is gone either way
                self._main.cancel()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()


def _content_block(item: Any) -> dict[str, Any]:
    kind = getattr(item, "type", None)
    if kind == "text":
        return {"type": "text", "text": item.text}
    if kind == "resource":
        res = item.resource
        resource = {"uri": str(res.uri), "mimeType": getattr(res, "mime_type", None)}
        if getattr(res, "text", None) is not None:
            resource["text"] = res.text
        if getattr(res, "blob", None) is not None:
            resource["blob"] = res.blob
        return {"type": "resource", "resource": {k: v for k, v in resource.items() if v is not None}}
    # Images, audio and links have no v1 tool-result block: describe them as JSON text.
    return {"type": "text", "text": item.model_dump_json(by_alias=True, exclude_none=True)}
