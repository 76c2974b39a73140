"""Client tools: how they are declared to the server, called, and how their results are encoded."""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from . import wire

__all__ = ["RegisteredTool", "ToolResult", "tool_result_block", "result_content"]

logger = logging.getLogger("clientsdk")

_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
# Streamable tools see partial arguments at most this often per tool call.
STREAM_THROTTLE_SECONDS = 0.1


@dataclass
class ToolResult:
    """An explicit tool result: content (anything a tool may return) and whether it is an error."""

    content: Any
    is_error: bool = False


@dataclass
class RegisteredTool:
    name: str
    fn: Callable[..., Any]
    description: str
    input_schema: dict[str, Any]
    model: type[BaseModel] | None = None
    streamable: bool = False
    _last_stream_call: dict[str, tuple[float, Any]] = field(default_factory=dict, repr=False)

    @classmethod
    def build(
        cls,
        name: str,
        fn: Callable[..., Any],
        description: str | None,
        input_schema: dict[str, Any] | type[BaseModel] | None,
        streamable: bool,
    ) -> RegisteredTool:
        model = input_schema if isinstance(input_schema, type) and issubclass(input_schema, BaseModel) else None
        if model is not None:
            schema = model.model_json_schema()
        else:
            schema = dict(input_schema) if input_schema is not None else dict(_EMPTY_SCHEMA)
        desc = description if description is not None else (fn.__doc__ or "").strip()
        return cls(name=name, fn=fn, description=desc, input_schema=schema, model=model, streamable=streamable)

    def declaration(self) -> wire.ClientTool:
        """How the tool is offered to the model (an entry of the run body's `tools`)."""
        return wire.ClientTool(name=self.name, description=self.description, input_schema=self.input_schema)

    def call(self, arguments: Any) -> Any:
        """Call the function: a pydantic model gets one validated instance, otherwise the JSON
        object's members are passed as keyword arguments (a non-object as one positional)."""
        if self.model is not None:
            return self.fn(self.model.model_validate(arguments if arguments is not None else {}))
        if isinstance(arguments, dict):
            return self.fn(**arguments)
        if arguments is None:
            return self.fn()
        return self.fn(arguments)

    def stream_partial(self, tool_call_id: str, partial_arguments: Any) -> None:
        """Call a streamable tool with partial arguments, throttled; never raises."""
        if not self.streamable or partial_arguments is None:
            return
        now = time.monotonic()
        last = self._last_stream_call.get(tool_call_id)
        if last is not None and (now - last[0] < STREAM_THROTTLE_SECONDS or last[1] == partial_arguments):
            return
        self._last_stream_call[tool_call_id] = (now, partial_arguments)
        try:
            self.call(partial_arguments)
        except (ValidationError, TypeError) as exc:
            # Partial arguments often lack required fields; that is expected while they stream.
            logger.debug("streamable tool %s skipped partial arguments: %s", self.name, exc)
        except Exception:
            logger.exception("streamable tool %s failed on partial arguments (ignored)", self.name)

    def finish_streaming(self, tool_call_id: str) -> None:
        self._last_stream_call.pop(tool_call_id, None)


# A block a tool result may hold, as the server validates it.
_RESULT_BLOCK: TypeAdapter[Any] = TypeAdapter(wire.InToolResultBlock.model_fields["content"].annotation)


def _content_blocks(value: list[Any]) -> list[dict[str, Any]] | None:
    """`value` as wire content blocks, or None when it is not a list of valid text/resource blocks."""
    items = [v.model_dump(by_alias=True, exclude_none=True, mode="json") if isinstance(v, BaseModel) else v
             for v in value]
    try:
        blocks = _RESULT_BLOCK.validate_python(items)
    except ValidationError:
        return None
    return [block.wire() for block in blocks]


def result_content(value: Any) -> list[dict[str, Any]]:
    """Turn what a tool returned into tool-result content blocks.

    str -> one text block; a list of content blocks ({type:"text"|"resource", ...}) passes through;
    None -> no blocks; a pydantic model, dict, list or other JSON value -> one text block of JSON.
    """
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if value is None:
        return []
    if isinstance(value, list) and value:
        blocks = _content_blocks(value)
        if blocks is not None:
            return blocks
    if isinstance(value, BaseModel):
        value = value.model_dump(by_alias=True, mode="json")
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = str(value)
    return [{"type": "text", "text": text}]


def tool_result_block(tool_use_id: str, value: Any) -> dict[str, Any]:
    """The wire `tool_result` block for one call. `value` may be a ToolResult or an exception."""
    if isinstance(value, BaseException):
        content, is_error = [{"type": "text", "text": f"{type(value).__name__}: {value}"}], True
    elif isinstance(value, ToolResult):
        content, is_error = result_content(value.content), value.is_error
    else:
        content, is_error = result_content(value), False
    return wire.InToolResultBlock.body(type="tool_result", tool_use_id=tool_use_id, content=content,
                                       is_error=is_error or None)


def block_text(block: dict[str, Any]) -> str:
    """The text of a tool_result block's content, for display and for the local snapshot."""
    parts = []
    for item in block.get("content", []):
        if item.get("type") == "text":
            parts.append(item["text"])
        elif item.get("type") == "resource":
            parts.append(item["resource"].get("text") or item["resource"].get("uri") or "[resource]")
    return "\n".join(parts)
