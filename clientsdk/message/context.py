"""The plugin interface of the message engine: states, the plugin base and the hook context."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .abort import AbortSignal

if TYPE_CHECKING:
    from .engine import MessageEngine

# request_state values
IDLE = "idle"
PROCESSING = "processing"
COMPLETED = "completed"
ABORTED = "aborted"
ERROR = "error"

# processing_state values (only while request_state == PROCESSING)
REQUESTING = "requesting"
COMPLETING = "completing"
CALLING_TOOLS = "calling-tools"

# UI-only fields that must never reach the model.
DEFAULT_EXCLUDED_FIELDS = ("state", "metadata", "loading")

HOOK_NAMES = (
    "on_turn_start",
    "on_before_request",
    "on_completion_chunk",
    "on_after_request",
    "on_turn_end",
    "on_error",
    "on_finally",
)


class Plugin:
    """Base class for engine plugins; any object (or dict) with the same attributes works too.

    Override any hook in `HOOK_NAMES`; each receives one `PluginContext` and
    may return an awaitable, which the engine awaits. Hook order per turn:
    `on_turn_start` (in order), then per request `on_before_request` (in
    order), `on_completion_chunk` per chunk, `on_after_request` (all of them,
    even if one raises; the first error is raised after), repeated while a hook
    called `context.request_next()`; then `on_turn_end` and `on_finally`.
    `on_error` runs instead of `on_turn_end` when the turn failed. A plugin
    whose `name` equals an earlier plugin's replaces it. `disabled` is a bool
    or a callable taking the context, read every time hooks are collected.
    """

    name: str | None = None
    disabled: bool | Callable[[PluginContext], bool] = False
    on_turn_start = None
    on_before_request = None
    on_completion_chunk = None
    on_after_request = None
    on_turn_end = None
    on_error = None
    on_finally = None

    def __init__(self, *, name: str | None = None, disabled: bool | Callable[..., bool] = False):
        if name is not None:
            self.name = name
        self.disabled = disabled


def plugin_attr(plugin: Any, attr: str) -> Any:
    """Read a plugin attribute from an object or a mapping; `None` when absent."""
    if isinstance(plugin, Mapping):
        return plugin.get(attr)
    return getattr(plugin, attr, None)


class RequestBody(dict):
    """The request dict handed to hooks and the provider.

    Assigning `messages` (also through `update`/`setdefault`) re-applies the
    engine's field filter, so a hook that rebuilds the message list cannot leak
    UI fields such as `state` or `metadata` to the model.
    """

    def __init__(self, sanitize: Callable[[Iterable[Mapping[str, Any]]], list[dict]], messages: Iterable):
        super().__init__()
        self._sanitize = sanitize
        self["messages"] = messages

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "messages":
            value = self._sanitize(value)
        super().__setitem__(key, value)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]


class PluginContext:
    """What a hook sees. Engine state is read live; hook-specific fields are `None` when n/a.

    `request_body` (on_before_request), `chunk`/`choice`/`current_message`
    (on_completion_chunk), `current_message`/`last_choice` (on_after_request),
    `error` (on_error). `request_next()` only works in `on_after_request`.
    """

    def __init__(
        self,
        engine: MessageEngine,
        abort_signal: AbortSignal,
        *,
        request_body: RequestBody | None = None,
        chunk: Mapping[str, Any] | None = None,
        choice: Mapping[str, Any] | None = None,
        current_message: dict[str, Any] | None = None,
        last_choice: Mapping[str, Any] | None = None,
        error: BaseException | None = None,
        request_next: Callable[[], None] | None = None,
    ):
        self._engine = engine
        self.abort_signal = abort_signal
        self.request_body = request_body
        self.chunk = chunk
        self.choice = choice
        self.current_message = current_message
        self.last_choice = last_choice
        self.error = error
        self._request_next = request_next

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self._engine.messages

    @property
    def current_turn(self) -> list[dict[str, Any]]:
        """The messages appended during this turn (user message included)."""
        return self._engine.current_turn

    @property
    def request_state(self) -> str:
        return self._engine.request_state

    @property
    def processing_state(self) -> str | None:
        return self._engine.processing_state

    @property
    def plugins(self) -> list[Any]:
        return self._engine.plugins

    @property
    def custom_context(self) -> dict[str, Any]:
        """Scratch space shared by hooks; emptied at the start of every turn."""
        return self._engine.custom_context

    def set_custom_context(self, data: Mapping[str, Any]) -> None:
        self._engine.custom_context.update(data)

    def set_request_state(self, state: str, processing_state: str | None = None) -> None:
        self._engine.set_request_state(state, processing_state)

    def append_message(self, message: dict[str, Any] | list[dict[str, Any]]) -> None:
        """Append to the conversation and to this turn."""
        self._engine.append_messages(message if isinstance(message, list) else [message])

    def request_next(self) -> None:
        """Ask for another request in this turn once every `on_after_request` hook has run."""
        if self._request_next is None:
            raise RuntimeError("request_next() can only be called from on_after_request")
        self._request_next()
