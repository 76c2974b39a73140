"""Python client for the Tambo v1 API (and the chat-completions message engine).

Layers, lowest first: `wire` (the pydantic models of the v1 wire, shared with the server), `_sse`
(bytes to SSE data, on sseclient-py), `streaming.Stream` (typed AG-UI events, closes its response),
`snapshot.accumulate` (pure fold of events into a `ThreadSnapshot`), `Client` (resources for every
endpoint, retries, errors) and `tool_loop.RunStream` (runs client tools and continues the run).
No Django anywhere.

The names below are loaded on first use (PEP 562). The server imports `clientsdk.wire` and
`clientsdk.partial_json`; importing the package for them must not pull in requests, sseclient-py
and the tool loop, which only the client needs.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Public name -> the submodule that defines it.
_EXPORTS = {
    "ToolResult": "_tools",
    "Component": "snapshot",
    "PendingToolCall": "snapshot",
    "RunErrorInfo": "snapshot",
    "SnapshotMessage": "snapshot",
    "ThreadSnapshot": "snapshot",
    "ToolCall": "snapshot",
    "accumulate": "snapshot",
    "Client": "client",
    "APIConnectionError": "errors",
    "APIError": "errors",
    "APIResponseValidationError": "errors",
    "APIStatusError": "errors",
    "APITimeoutError": "errors",
    "AuthenticationError": "errors",
    "BadRequestError": "errors",
    "ConflictError": "errors",
    "InternalServerError": "errors",
    "MaxStepsExceeded": "errors",
    "NotFoundError": "errors",
    "RateLimitError": "errors",
    "RunError": "errors",
    "TamboError": "errors",
    "ResumingStream": "resume",
    "Stream": "streaming",
    "parse_event": "streaming",
    "RunStream": "tool_loop",
}

# Literal, so that linters see the names the TYPE_CHECKING block below imports as used.
__all__ = [
    "APIConnectionError",
    "APIError",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "Client",
    "Component",
    "ConflictError",
    "InternalServerError",
    "MaxStepsExceeded",
    "NotFoundError",
    "PendingToolCall",
    "RateLimitError",
    "ResumingStream",
    "RunError",
    "RunErrorInfo",
    "RunStream",
    "SnapshotMessage",
    "Stream",
    "TamboError",
    "ThreadSnapshot",
    "ToolCall",
    "ToolResult",
    "accumulate",
    "parse_event",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'clientsdk' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from ._tools import ToolResult
    from .snapshot import (
        Component,
        PendingToolCall,
        RunErrorInfo,
        SnapshotMessage,
        ThreadSnapshot,
        ToolCall,
        accumulate,
    )
    from .client import Client
    from .errors import (
        APIConnectionError,
        APIError,
        APIResponseValidationError,
        APIStatusError,
        APITimeoutError,
        AuthenticationError,
        BadRequestError,
        ConflictError,
        InternalServerError,
        MaxStepsExceeded,
        NotFoundError,
        RateLimitError,
        RunError,
        TamboError,
    )
    from .resume import ResumingStream
    from .streaming import Stream, parse_event
    from .tool_loop import RunStream
