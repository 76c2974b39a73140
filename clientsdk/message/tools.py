"""The tool plugin: advertises tools, runs the model's tool calls locally, and asks for the next request."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from .abort import AbortError
from .context import CALLING_TOOLS, PROCESSING, Plugin, PluginContext
from .delta import combine_delta
from .normalize import iterate_result, resolve

logger = logging.getLogger(__name__)

TOOL_CALL_FAILED = "Tool call failed."
TOOL_CALL_CANCELLED = "Tool call cancelled."
TOOL_ROUNDS_EXHAUSTED = "Tool call skipped: the limit of {limit} tool rounds for one turn was reached."
DEFAULT_MAX_TOOL_ROUNDS = 10

# Kept in the per-turn custom context, so one plugin instance can serve several engines.
_ROUNDS_KEY = "tool_rounds"


class ToolPlugin(Plugin):
    """Runs tool calls locally between model requests.

    Before each request `get_tools()` (a list of OpenAI tool dicts, possibly
    awaitable) fills `request_body["tools"]` when non-empty. When a request's
    last choice finished with `tool_calls`, the state becomes `calling-tools`,
    one `{"role": "tool", "tool_call_id", "content": ""}` message per call is
    appended in call order, and `call_tool(tool_call)` runs for each call in
    that order. A str result (or streamed str piece) is appended to `content`;
    a dict is merged into the JSON object held in `content`; an iterator,
    awaitable or async iterator streams such pieces.
    `current_message["state"]["toolCall"][id]["status"]` goes `running`, then
    `success`, `failed` (content becomes "Tool call failed." if still empty)
    or `cancelled` (on abort). Then the next request is asked for.

    At most `max_tool_rounds` rounds run per turn; when the model asks for
    more, each call is answered with a "skipped" tool message (status
    `cancelled`) and the turn ends, so the conversation stays valid for the
    next turn.
    """

    name = "tool"

    def __init__(
        self,
        get_tools: Callable[[], Any],
        call_tool: Callable[[dict[str, Any]], Any],
        *,
        max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
        tool_call_failed_content: str = TOOL_CALL_FAILED,
        tool_call_cancelled_content: str = TOOL_CALL_CANCELLED,
        **options: Any,
    ):
        super().__init__(**options)
        if max_tool_rounds < 0:
            raise ValueError("max_tool_rounds must be >= 0")
        self.get_tools = get_tools
        self.call_tool = call_tool
        self.max_tool_rounds = max_tool_rounds
        self.tool_call_failed_content = tool_call_failed_content
        self.tool_call_cancelled_content = tool_call_cancelled_content

    def on_before_request(self, context: PluginContext) -> None:
        tools = resolve(self.get_tools(), context.abort_signal) if self.get_tools else None
        if tools:
            context.request_body["tools"] = list(tools)

    def on_completion_chunk(self, context: PluginContext) -> None:
        # Every call gets a state slot as soon as it streams in, so a UI can show it before it runs.
        for tool_call in _tool_calls(context.current_message):
            _tool_state(context.current_message, tool_call["id"])

    def on_after_request(self, context: PluginContext) -> None:
        message = context.current_message
        last_choice = context.last_choice or {}
        tool_calls = _tool_calls(message)
        if last_choice.get("finish_reason") != "tool_calls" or not tool_calls:
            return
        context.set_request_state(PROCESSING, CALLING_TOOLS)
        tool_messages = [_append_tool_message(context, call) for call in tool_calls]
        rounds = context.custom_context.get(_ROUNDS_KEY, 0)
        if rounds >= self.max_tool_rounds:
            skipped = TOOL_ROUNDS_EXHAUSTED.format(limit=self.max_tool_rounds)
            for call, tool_message in zip(tool_calls, tool_messages):
                tool_message["content"] = skipped
                _tool_state(message, call["id"])["status"] = "cancelled"
            return
        context.custom_context[_ROUNDS_KEY] = rounds + 1
        for call, tool_message in zip(tool_calls, tool_messages):
            self._run_tool_call(context, call, tool_message)
        if not context.abort_signal.is_set():
            context.request_next()

    def _run_tool_call(self, context: PluginContext, call: dict, tool_message: dict) -> None:
        state = _tool_state(context.current_message, call["id"])
        signal = context.abort_signal
        state["status"] = "running"
        try:
            signal.raise_if_aborted()
            for piece in iterate_result(self.call_tool(call), signal):
                signal.raise_if_aborted()
                _add_result_piece(tool_message, piece)
            state["status"] = "success"
        except Exception as error:
            if signal.is_set() or isinstance(error, AbortError):
                state["status"] = "cancelled"
                if not tool_message["content"]:
                    tool_message["content"] = self.tool_call_cancelled_content
                return
            logger.warning("tool call %s failed", call.get("function", {}).get("name"), exc_info=True)
            state["status"] = "failed"
            if not tool_message["content"]:
                tool_message["content"] = self.tool_call_failed_content


def tool_plugin(
    get_tools: Callable[[], Any],
    call_tool: Callable[[dict[str, Any]], Any],
    *,
    max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
    **options: Any,
) -> ToolPlugin:
    """Build a `ToolPlugin`; see its docstring for the contract."""
    return ToolPlugin(get_tools, call_tool, max_tool_rounds=max_tool_rounds, **options)


def _tool_calls(message: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    # Holes from a sparse index merge, or calls that never got an id, cannot be answered.
    calls = (message or {}).get("tool_calls") or []
    return [c for c in calls if isinstance(c, dict) and c.get("id")]


def _tool_state(message: dict[str, Any], call_id: str) -> dict[str, Any]:
    state = message.get("state")
    if not isinstance(state, dict):
        state = message["state"] = {}
    return state.setdefault("toolCall", {}).setdefault(call_id, {})


def _append_tool_message(context: PluginContext, call: dict[str, Any]) -> dict[str, Any]:
    now = int(time.time())
    tool_message = {
        "role": "tool",
        "tool_call_id": call["id"],
        "content": "",
        "metadata": {"createdAt": now, "updatedAt": now},
    }
    context.append_message(tool_message)
    return tool_message


def _add_result_piece(tool_message: dict[str, Any], piece: Any) -> None:
    if isinstance(piece, (str, bytes)):
        tool_message["content"] += piece if isinstance(piece, str) else piece.decode("utf-8", "replace")
    elif isinstance(piece, Mapping):
        try:
            current = json.loads(tool_message["content"] or "{}")
        except ValueError:
            logger.warning("tool content is not JSON; starting a new object")
            current = {}
        if not isinstance(current, dict):
            current = {}
        tool_message["content"] = json.dumps(combine_delta(current, piece), ensure_ascii=False)
    elif piece is not None:
        tool_message["content"] += json.dumps(piece, ensure_ascii=False, default=str)
    tool_message["metadata"]["updatedAt"] = int(time.time())
