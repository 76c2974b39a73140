"""What the model is offered in one run, and how a server-side call is executed.

Four kinds of tool share one namespace: the request's client tools (run by the application), the
project's built-in server tools, its MCP servers' tools (`<server>__<tool>`), and the request's
components (`show_component_<Name>`). Server-side calls never fail the run: a tool that raises,
times out, or gets arguments that fail its schema gives an `isError` result the model can read.
"""
from __future__ import annotations

import asyncio
import json
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from django.conf import settings
from pydantic import ValidationError

from clientsdk import wire
from core.runtime import process_runtime
from providers.base import ModelTool
from runs.history import component_tool_name
from tools.registry import ServerTool, get_tool

log = logging.getLogger(__name__)

Kind = Literal["client", "server", "mcp", "component"]


@dataclass
class ToolResult:
    content: list[dict[str, Any]]
    is_error: bool = False
    # An MCP tool asked for the user's input (tools/mcp_input.py `InputRequest`): the run pauses.
    input_request: Any = None

    @property
    def text(self) -> str:
        return "\n".join(b.get("text", "") for b in self.content if b.get("type") == "text")


def error_result(text: str) -> ToolResult:
    return ToolResult([{"type": "text", "text": text}], is_error=True)


@dataclass
class Toolbox:
    client_tools: dict[str, wire.ClientTool] = field(default_factory=dict)
    components: dict[str, wire.AvailableComponent] = field(default_factory=dict)  # by tool name
    server_tools: dict[str, ServerTool] = field(default_factory=dict)
    mcp_tools: dict[str, tuple[Any, str, ModelTool]] = field(default_factory=dict)  # name → (config, tool, spec)
    timeout: float = 30.0
    mcp_timeout: float = 30.0
    # The most characters of one server or MCP tool result that are stored and sent to the model.
    result_max_chars: int = 100_000
    # Server and MCP calls that timed out in this run: each counts as a step (runs/loop.py MAX_STEPS),
    # so a tool that hangs cannot keep a run going for MAX_STEPS model calls of its timeout each.
    timeouts: int = 0
    # Protected MCP servers the run's user must authorise before the run goes on: (server, URL).
    authorizations: list[tuple[str, str]] = field(default_factory=list)

    def kind(self, name: str) -> Kind | None:
        if name in self.components:
            return "component"
        if name in self.client_tools:
            return "client"
        if name in self.server_tools:
            return "server"
        if name in self.mcp_tools:
            return "mcp"
        return None

    def repeatable(self, name: str) -> bool:
        """Whether a server or MCP tool may run again for a call whose result was not stored (a run
        taken over: docs/tools.md#safe-to-repeat)."""
        if name in self.server_tools:
            return self.server_tools[name].repeatable
        return name in getattr(self.mcp_tools, "repeatable", ())

    def max_calls(self, name: str) -> int | None:
        tool = self.client_tools.get(name)
        return tool.max_calls if tool is not None else None

    def model_tools(self) -> list[ModelTool]:
        # Each name is offered once, with the definition its calls go to (`kind`): providers refuse
        # a request that names a tool twice.
        tools = [ModelTool(t.name, t.description, t.input_schema) for t in self.client_tools.values()
                 if self.kind(t.name) == "client"]
        tools += [ModelTool(t.name, t.description, t.parameters) for t in self.server_tools.values()
                  if self.kind(t.name) == "server"]
        tools += [spec for name, (_, _, spec) in self.mcp_tools.items() if self.kind(name) == "mcp"]
        tools += [
            ModelTool(name, f"Show the {c.name} component to the user. {c.description}".strip(),
                      _object_schema(c.props_schema), display_name=c.name)
            for name, c in self.components.items()
        ]
        return tools

    async def execute(self, name: str, arguments: dict[str, Any],
                      answers: list[dict[str, Any]] | None = None) -> ToolResult:
        """Runs a server or MCP tool; every failure becomes an isError result. A result longer than
        `result_max_chars` is cut here, before it is stored or sent to the model (result_capped).
        `answers`: the user's answers to an MCP tool's requests for input so far (runs/mcp_inputs.py)."""
        return result_capped(await self._execute(name, arguments, answers), self.result_max_chars)

    def mcp_server_of(self, name: str) -> str:
        entry = self.mcp_tools.get(name)
        return entry[0].name if entry is not None else ""

    async def _execute(self, name: str, arguments: dict[str, Any],
                       answers: list[dict[str, Any]] | None = None) -> ToolResult:
        if name in self.server_tools:
            return await self._run_builtin(self.server_tools[name], arguments)
        if name in self.mcp_tools:
            from tools.mcp_sessions import sessions  # the MCP SDK: see mcp_tools_load

            config, tool_name, _ = self.mcp_tools[name]
            # The server's kept session: a stdio server is not started again for every call.
            result = await sessions().call_tool(config, tool_name, arguments, timeout=self.mcp_timeout,
                                                answers=answers)
            self.timeouts += result.timed_out
            return ToolResult(result.content, result.is_error, result.input_request)
        return error_result(f"There is no tool named {name}.")

    async def _run_builtin(self, tool: ServerTool, arguments: dict[str, Any]) -> ToolResult:
        try:
            args = tool.args_model.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors())
            return error_result(f"Invalid arguments for {tool.name}: {problems}")
        if tool.is_async:
            call = tool.fn(args)
        else:
            # A thread cannot be stopped: a sync tool that times out keeps its thread until it returns.
            # Its own bounded executor keeps such tools from taking the loop's default threads (which
            # DNS lookups and other libraries share); once all are stuck, more calls queue and time out.
            call = asyncio.get_running_loop().run_in_executor(tool_executor(), tool.fn, args)
        try:
            value = await asyncio.wait_for(call, timeout=self.timeout)
        except asyncio.TimeoutError:
            self.timeouts += 1
            return error_result(f"Tool {tool.name} timed out after {self.timeout:g} s.")
        except Exception as exc:  # noqa: BLE001 - the model reads the failure, the run goes on
            log.warning("Server tool %s failed: %s", tool.name, type(exc).__name__)
            message = str(exc) if isinstance(exc, (ValueError, ArithmeticError)) else type(exc).__name__
            return error_result(f"Tool {tool.name} failed: {message}")
        return ToolResult(to_content(value))


def result_capped(result: ToolResult, limit: int) -> ToolResult:
    """`result` cut to `limit` characters (text, and a resource block's JSON), with a last text block
    that tells the model it was cut. A 50 MB MCP result was stored and re-sent to the model on every
    later step of the run; a resource that does not fit whole is left out."""
    sizes = [len(b.get("text", "")) if b.get("type") == "text" else len(json.dumps(b)) for b in result.content]
    total = sum(sizes)
    if total <= limit:
        return result
    kept, used = [], 0
    for block, size in zip(result.content, sizes):
        if block.get("type") == "text" and used < limit:
            kept.append({**block, "text": block.get("text", "")[:limit - used]})
            used += min(size, limit - used)
        elif block.get("type") != "text" and used + size <= limit:
            kept.append(block)
            used += size
    kept.append({"type": "text", "text": f"[The tool's result was cut: it had {total} characters, more than the "
                                         f"{limit} passed on; only the first {used} are shown.]"})
    return ToolResult(kept, result.is_error, result.input_request)


def to_content(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if isinstance(value, list) and value and all(isinstance(b, dict) and b.get("type") in ("text", "resource")
                                                 for b in value):
        return value
    return [{"type": "text", "text": json.dumps(value, ensure_ascii=False, default=str)}]


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    # Function parameters must be an object schema for every provider.
    if schema.get("type") == "object" or "properties" in schema:
        return schema
    return {"type": "object", "properties": {}, "additionalProperties": True}


def toolbox_build(*, client_tools: list[wire.ClientTool], components: list[wire.AvailableComponent],
                  enabled: list[str], result_max_chars: int | None = None) -> Toolbox:
    """The run's tools but MCP's, whose listing is async (`mcp_tools_load`); `enabled` names the
    project's built-in tools, read with the run's lock (tools/selectors.py). No I/O."""
    server_tools = {name: tool for name in enabled if (tool := get_tool(name)) is not None}
    return Toolbox(
        # The app's answerer of MCP tools' input requests is not the model's to call (runs/mcp_inputs.py).
        client_tools={t.name: t for t in client_tools if t.name != wire.MCP_INPUT_TOOL},
        components={component_tool_name(c.name): c for c in components},
        server_tools=server_tools,
        timeout=settings.SERVER_TOOL_TIMEOUT,
        mcp_timeout=settings.MCP_TIMEOUT,
        result_max_chars=result_max_chars or settings.TOOL_RESULT_MAX_CHARS,
    )


_tool_executor: ThreadPoolExecutor | None = None


def tool_executor() -> ThreadPoolExecutor:
    """The process's threads for synchronous server tools (SERVER_TOOL_THREADS, created on first use)."""
    global _tool_executor
    if _tool_executor is None:
        _tool_executor = ThreadPoolExecutor(max_workers=settings.SERVER_TOOL_THREADS, thread_name_prefix="tambo-tool")
    return _tool_executor


_cache = None  # the MCP servers' tool listings (tools/mcp_tool_cache.py), made by the first run using MCP


def _mcp_tools_forget() -> None:
    global _cache
    _cache = None  # its listings, and the listing tasks of a loop that is ending


process_runtime.cache_register("MCP tool listings", _mcp_tools_forget)


async def mcp_grants(configs: list[Any], *, user_key: str) -> tuple[list[Any], list[tuple[str, str]]]:
    """The MCP servers the run may use, each OAuth one bound to its grant, and the authorisations the
    user must give first (tools/mcp_vault.py `grants_check`); no statement without an OAuth server."""
    if not any(config.auth != "none" for config in configs):
        return configs, []
    from tools.mcp_vault import grants_check

    grants = await grants_check(configs, user_key=user_key, timeout=settings.MCP_TIMEOUT)
    return grants.configs, grants.needed


class McpTools(dict):
    """A run's MCP tools by name (→ config, tool, spec), and the names of those safe to repeat."""

    def __init__(self) -> None:
        super().__init__()
        self.repeatable: set[str] = set()


async def mcp_tools_load(configs: list[Any]) -> dict[str, tuple[Any, str, ModelTool]]:
    """Lists each server's tools (cached briefly, one listing per server at a time, on the server's
    kept session); a server that cannot be reached is left out."""
    global _cache
    if not configs:
        return McpTools()
    # The MCP SDK takes a second to import: only for projects using MCP.
    from tools.mcp_sessions import sessions
    from tools.mcp_tool_cache import McpToolCache

    if _cache is None:
        _cache = McpToolCache(ttl=settings.MCP_TOOLS_CACHE_SECONDS, timeout=settings.MCP_TIMEOUT,
                              failure_ttl=settings.MCP_RETRY_SECONDS, max_backoff=60 * settings.MCP_RETRY_SECONDS,
                              lister=lambda config, timeout: sessions().list_tools(config, timeout=timeout))
    listed = await asyncio.gather(*(_cache.get(config) for config in configs))
    tools = McpTools()
    for config, server_tools in zip(configs, listed):
        if server_tools is None:
            log.warning("MCP server %s is unreachable; its tools are left out of this run", config.name)
            continue
        for tool in server_tools:
            name = f"{config.name}__{tool.name}"
            tools[name] = (config, tool.name, ModelTool(name, tool.description or "", tool.input_schema))
            if tool.repeatable:
                tools.repeatable.add(name)
    return tools
