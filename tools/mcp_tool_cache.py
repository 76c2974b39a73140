"""Each MCP server's tool list, shared by the runs of one process: one listing at a time per server.

A burst of runs that all miss the cache must not each list the tools themselves: on a stdio server
every listing would start a process (a burst of 300 runs once started 87 at a time, and a third of the
runs lost their lease waiting). So a listing is a single flight: the first run that needs it starts
it as a task of its own, and every other run that needs it meanwhile awaits that same task.

A failed listing is remembered. Until it is retried, runs leave the server out at once instead of
waiting for it again; the retry happens in the background, `failure_ttl` seconds after the failure,
doubling with each failure in a row up to `max_backoff`. So a server that hangs costs its timeout
once (the runs that were waiting for that listing), not once per run.

How long a tool list is kept: `ttl` seconds, unless the server says otherwise. A 2026-07-28 server's
list carries `ttlMs` (its caching hint, docs/tools.md#tool-lists-and-protocol-eras), which is honoured
within [MIN_SERVER_TTL, MAX_SERVER_TTL]. The floor because the package's servers send `ttlMs: 0`
("immediately stale") unless their author sets a hint, and a listing per run would cost more than a
round trip: a listing waits behind a call in flight on the server's kept session (tools/mcp_sessions.py
runs one at a time), so every run starting during a slow call would wait for it. The ceiling because no
notification tells us of a changed list on a stateless connection: an hour bounds how long a generous
hint hides a new or removed tool.

Django-free: the caller passes the lister (tools.mcp_sessions lists on the server's kept session, so
the listing and the calls share one process).
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from tools import mcp_client
from tools.mcp_client import McpClientError, McpServerConfig, McpTool, McpToolList

logger = logging.getLogger("tools.mcp_client")

_PRUNE_ABOVE = 1000
MIN_SERVER_TTL = 5.0  # seconds
MAX_SERVER_TTL = 3600.0
# (config, *, timeout) -> tools (an McpToolList carries the server's ttl); raises McpClientError
Lister = Callable[..., Awaitable[list[McpTool]]]


@dataclass(frozen=True)
class _Entry:
    expires: float  # a tool list's end of life, or a failure's time of retry
    tools: list[McpTool] | None  # None: the last listing failed
    failures: int = 0  # failed listings in a row


class McpToolCache:
    """Safe to share between the tasks of one event loop (a flight belongs to the loop that started it)."""

    def __init__(self, *, ttl: float = 30.0, failure_ttl: float = 5.0, max_backoff: float = 300.0,
                 timeout: float = 10.0, clock: Callable[[], float] = time.monotonic,
                 lister: Lister | None = None) -> None:
        self._ttl = ttl
        self._failure_ttl = failure_ttl
        self._max_backoff = max(max_backoff, failure_ttl)
        self._timeout = timeout
        self._clock = clock
        self._lister = lister
        self._entries: dict[McpServerConfig, _Entry] = {}
        self._flights: dict[McpServerConfig, asyncio.Task] = {}

    async def get(self, config: McpServerConfig) -> list[McpTool] | None:
        """The server's tools, or None when its last listing failed (logged once per listing).

        Waits only for a server with no tool list yet or an expired one, and then for the one listing
        in flight. A caller that is cancelled while waiting does not cancel the listing.
        """
        entry = self._entries.get(config)
        if entry is not None and entry.tools is None:
            if entry.expires <= self._clock():
                self._flight(config)  # retried in the background; this run goes on without it
            return None
        if entry is not None and entry.expires > self._clock():
            return list(entry.tools)
        tools = await asyncio.shield(self._flight(config))
        return None if tools is None else list(tools)

    def listing(self, config: McpServerConfig) -> asyncio.Task | None:
        """The listing of `config` in flight on this loop, if any."""
        task = self._flights.get(config)
        if task is None or task.done() or task.get_loop() is not asyncio.get_running_loop():
            return None
        return task

    def clear(self) -> None:
        self._entries.clear()

    def _flight(self, config: McpServerConfig) -> asyncio.Task:
        task = self.listing(config)
        if task is None:
            # A context of its own: the listing serves every run, not the request that happened to start it.
            task = asyncio.get_running_loop().create_task(self._list(config), context=contextvars.Context())
            self._flights[config] = task
        return task

    async def _list(self, config: McpServerConfig) -> list[McpTool] | None:
        if len(self._entries) > _PRUNE_ABOVE:
            # A server behind each user's OAuth grant has one entry per user (tools/mcp_vault.py): the
            # expired ones go, so the cache holds the users of the last `ttl` seconds, not every user seen.
            now = self._clock()
            self._entries = {key: entry for key, entry in self._entries.items() if entry.expires > now}
        lister = self._lister or mcp_client.list_tools
        tools: list[McpTool] | None
        try:
            tools = await lister(config, timeout=self._timeout)
        except McpClientError as exc:
            logger.warning("Leaving out the tools of MCP server %r: %s", config.name, exc, exc_info=exc.__cause__)
            tools = None
        if tools is not None:
            self._entries[config] = _Entry(self._clock() + self._fresh_for(tools), tools)
            return tools
        previous = self._entries.get(config)
        failures = previous.failures + 1 if previous is not None and previous.tools is None else 1
        backoff = min(self._failure_ttl * 2 ** (failures - 1), self._max_backoff)
        self._entries[config] = _Entry(self._clock() + backoff, None, failures)
        return None

    def _fresh_for(self, tools: list[McpTool]) -> float:
        """Seconds a listing stays fresh: the server's own `ttlMs`, bounded, or else `ttl`."""
        server_ttl = tools.ttl if isinstance(tools, McpToolList) else None
        if server_ttl is None:
            return self._ttl
        return min(max(server_ttl, MIN_SERVER_TTL), MAX_SERVER_TTL)
