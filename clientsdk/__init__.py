"""Python client for the Tambo v1 API (and the chat-completions message engine).

Layers, lowest first: `_sse` (bytes to SSE data, on sseclient-py), `streaming.Stream` (typed AG-UI
events, closes its response), `accumulate.accumulate` (pure fold of events into a
`ThreadSnapshot`), `Client` (resources for every endpoint, retries, errors) and
`tool_loop.RunStream` (runs client tools and continues the run). No Django anywhere.
"""
from ._tools import ToolResult
from .accumulate import (
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

__all__ = [
    "Client",
    "RunStream",
    "Stream",
    "ResumingStream",
    "ToolResult",
    "accumulate",
    "parse_event",
    "ThreadSnapshot",
    "SnapshotMessage",
    "ToolCall",
    "Component",
    "PendingToolCall",
    "RunErrorInfo",
    "TamboError",
    "APIError",
    "APIStatusError",
    "BadRequestError",
    "AuthenticationError",
    "NotFoundError",
    "ConflictError",
    "RateLimitError",
    "InternalServerError",
    "APIConnectionError",
    "APITimeoutError",
    "APIResponseValidationError",
    "RunError",
    "MaxStepsExceeded",
]
