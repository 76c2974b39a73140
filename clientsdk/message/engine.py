"""The message engine: a synchronous port of TinyRobot 0.4's `useMessage`."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .abort import AbortError, AbortSignal
from .context import (
    ABORTED,
    COMPLETED,
    COMPLETING,
    DEFAULT_EXCLUDED_FIELDS,
    ERROR,
    IDLE,
    PROCESSING,
    REQUESTING,
    PluginContext,
    RequestBody,
    plugin_attr,
)
from .delta import combine_delta, filter_message_fields
from .normalize import iterate_result, resolve
from .plugins import default_plugins

logger = logging.getLogger(__name__)

_CLOSING_HOOKS = frozenset({"on_turn_end", "on_error", "on_finally"})

ResponseProvider = Callable[[RequestBody, AbortSignal], Any]
ChunkHandler = Callable[[PluginContext, Callable[[], None]], None]


def deduplicate_plugins(plugins: Iterable[Any]) -> list[Any]:
    """Keep plugin order, but a named plugin removes an earlier one of the same name."""
    result: list[Any] = []
    for plugin in plugins:
        name = plugin_attr(plugin, "name")
        if name:
            result = [p for p in result if plugin_attr(p, "name") != name]
        result.append(plugin)
    return result


class MessageEngine:
    """A conversation plus the turn loop that talks to a response provider and runs plugins.

    `response_provider(request_body, abort_signal)` returns one completion
    dict, an iterator of chunk dicts, or an awaitable / async iterator of
    either. It is read once per turn, so it may be swapped between turns.
    `messages` is the live conversation (the `initial_messages` list itself
    when given). The default plugins (fallback role, thinking, length) come
    first; `plugins` follow and replace defaults of the same name.

    Threading: one turn runs at a time, in the thread that called
    `send_message`/`send`. Only `abort_request` may be called from another
    thread while a turn runs; `on_state_change(request_state,
    processing_state)` is called in the turn's thread on every change.
    """

    def __init__(
        self,
        response_provider: ResponseProvider,
        *,
        initial_messages: list[dict[str, Any]] | None = None,
        plugins: Sequence[Any] = (),
        request_message_fields: Sequence[str] | None = None,
        request_message_fields_exclude: Sequence[str] = DEFAULT_EXCLUDED_FIELDS,
        on_completion_chunk: ChunkHandler | None = None,
        on_state_change: Callable[[str, str | None], None] | None = None,
    ):
        self.response_provider = response_provider
        self.messages: list[dict[str, Any]] = initial_messages if initial_messages is not None else []
        self.request_message_fields = list(request_message_fields or ())
        self.request_message_fields_exclude = list(request_message_fields_exclude)
        self.plugins = deduplicate_plugins([*default_plugins(), *plugins])
        self.on_completion_chunk = on_completion_chunk
        self.on_state_change = on_state_change
        self.custom_context: dict[str, Any] = {}
        self._request_state = IDLE
        self._processing_state: str | None = None
        self._current_turn: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._abort_signal: AbortSignal | None = None
        self._turn_thread: threading.Thread | None = None
        self._turn_provider: ResponseProvider = response_provider

    # -- public surface -------------------------------------------------

    @property
    def request_state(self) -> str:
        """`idle` (before the first send), `processing`, `completed`, `aborted` or `error`."""
        return self._request_state

    @property
    def processing_state(self) -> str | None:
        """`requesting`, `completing` or `calling-tools` while processing, else `None`."""
        return self._processing_state

    @property
    def is_processing(self) -> bool:
        return self._request_state == PROCESSING

    @property
    def current_turn(self) -> list[dict[str, Any]]:
        return self._current_turn

    def send_message(self, text: str) -> str | None:
        """Append `text` as a user message and run a turn; return the final `request_state`.

        Blank text, or a call while a turn is processing, is refused: nothing
        changes and `None` is returned. Otherwise this blocks until the turn,
        tool rounds included, has ended. The turn's exception is re-raised only
        when no enabled plugin defines `on_error`.
        """
        if not isinstance(text, str) or not text.strip():
            logger.warning("Cannot send an empty message")
            return None
        now = int(time.time())
        message = {"role": "user", "content": text.strip(), "metadata": {"createdAt": now, "updatedAt": now}}
        return self._start_turn([message])

    def send(self, *messages: dict[str, Any]) -> str | None:
        """Append `messages` as they are and run a turn; same contract as `send_message`."""
        return self._start_turn(list(messages))

    def abort_request(self, timeout: float | None = None) -> bool:
        """Abort the running turn; it ends as `aborted` after `on_turn_end` runs.

        From another thread, blocks until processing has stopped (or `timeout`
        seconds) and returns whether it stopped. From inside a hook it only
        signals and returns False, since the turn stops when the hook returns.
        Without a running turn it returns True at once.
        """
        with self._lock:
            signal, thread = self._abort_signal, self._turn_thread
        if signal is None:
            return True
        signal.abort()
        if thread is threading.current_thread():
            return False
        return self._idle.wait(timeout)

    def set_request_state(self, state: str, processing_state: str | None = None) -> None:
        """Set the state; `processing` without a sub-state means `requesting`."""
        new = (state, (processing_state or REQUESTING) if state == PROCESSING else None)
        if new == (self._request_state, self._processing_state):
            return
        self._request_state, self._processing_state = new
        if self.on_state_change is not None:
            self.on_state_change(*new)

    def append_messages(self, messages: list[dict[str, Any]]) -> None:
        """Append to the conversation and, during a turn, to `current_turn`."""
        self.messages.extend(messages)
        self._current_turn.extend(messages)

    def sanitize_messages(self, messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Apply the keep-list, then the drop-list, to each message (shallow copies)."""
        return [
            filter_message_fields(m, self.request_message_fields, self.request_message_fields_exclude)
            for m in messages
        ]

    # -- the turn -------------------------------------------------------

    def _start_turn(self, messages: list[dict[str, Any]]) -> str | None:
        with self._lock:
            # The turn is claimed under the lock so that a concurrent send is refused.
            if self._turn_thread is not None:
                logger.warning("Cannot send a message while a turn is processing")
                return None
            signal = self._abort_signal = AbortSignal()
            self._turn_thread = threading.current_thread()
            self._idle.clear()
        self._run_turn(messages, signal)
        return self._request_state

    def _run_turn(self, messages: list[dict[str, Any]], signal: AbortSignal) -> None:
        """Run one claimed turn; whatever happens, the claim is released at the end."""
        try:
            try:
                self.set_request_state(PROCESSING, REQUESTING)
                # Snapshot: swapping `response_provider` mid-turn must not mix two sources.
                self._turn_provider = self.response_provider
                self.custom_context = {}
                self.append_messages(messages)
                self._run_to_turn_end(signal)
            except Exception as error:
                self.set_request_state(ERROR)
                if not self._call_error_hooks(error, signal):
                    raise
        finally:
            if self.is_processing:
                # Only a BaseException (KeyboardInterrupt, SystemExit) gets here mid-turn;
                # the turn did not complete, and "processing" must not outlive it.
                self._request_state, self._processing_state = ABORTED, None
            self._call_hooks_logged("on_finally", signal)
            if self._current_turn:
                self._current_turn[-1].pop("loading", None)
            self._current_turn = []
            with self._lock:
                self._abort_signal = None
                self._turn_thread = None
            self._idle.set()

    def _run_to_turn_end(self, signal: AbortSignal) -> None:
        try:
            self._call_hooks("on_turn_start", signal)
            while self._execute_request(signal):
                pass
            self.set_request_state(COMPLETED)
        except Exception as error:
            if not (signal.aborted or isinstance(error, AbortError)):
                raise
            self.set_request_state(ABORTED)
        self._call_hooks("on_turn_end", signal)

    def _execute_request(self, signal: AbortSignal) -> bool:
        """Run one request; return whether a hook asked for another."""
        self.set_request_state(PROCESSING, REQUESTING)
        body = RequestBody(self.sanitize_messages, self.messages)
        self._call_hooks("on_before_request", signal, request_body=body)
        signal.raise_if_aborted()
        # Appended only now, so the empty placeholder never goes out in its own request.
        message: dict[str, Any] = {"role": "", "content": "", "loading": True}
        self.append_messages([message])
        last_choice = self._stream_response(body, message, signal)
        return self._after_request(message, last_choice, signal)

    def _stream_response(self, body: RequestBody, message: dict[str, Any], signal: AbortSignal) -> Any:
        last_choice = None
        chunks = iterate_result(self._turn_provider(body, signal), signal)
        try:
            for chunk in chunks:
                signal.raise_if_aborted()
                if not isinstance(chunk, Mapping):
                    raise TypeError(f"response provider yielded {type(chunk).__name__}, expected a dict")
                self.set_request_state(PROCESSING, COMPLETING)
                message.pop("loading", None)
                # Metadata follows every chunk: the usage-only chunk has no choice.
                _update_metadata(message, chunk)
                choice = _first_choice(chunk)
                if choice is not None:
                    last_choice = choice
                    self._apply_chunk(chunk, choice, message, signal)
                self._call_hooks(
                    "on_completion_chunk", signal, chunk=chunk, choice=choice, current_message=message
                )
        finally:
            chunks.close()
        signal.raise_if_aborted()
        return last_choice

    def _apply_chunk(self, chunk: Mapping, choice: Mapping, message: dict, signal: AbortSignal) -> None:
        def run_default() -> None:
            delta = choice.get("message") if choice.get("message") is not None else choice.get("delta")
            # A chunk with neither is skipped (0.4 crashed on it).
            if isinstance(delta, Mapping):
                combine_delta(message, delta)

        if self.on_completion_chunk is None:
            run_default()
            return
        context = PluginContext(self, signal, chunk=chunk, choice=choice, current_message=message)
        self.on_completion_chunk(context, run_default)

    def _after_request(self, message: dict[str, Any], last_choice: Any, signal: AbortSignal) -> bool:
        requested: list[bool] = []
        context = PluginContext(
            self, signal, current_message=message, last_choice=last_choice,
            request_next=lambda: requested.append(True),
        )
        first_error: Exception | None = None
        # Every hook runs, like 0.4's Promise.all; the first failure is raised afterwards.
        for hook in self._hooks("on_after_request", context):
            try:
                resolve(hook(context), signal)
            except Exception as error:
                first_error = first_error or error
        if first_error is not None:
            raise first_error
        signal.raise_if_aborted()
        return bool(requested)

    # -- hooks ----------------------------------------------------------

    def _hooks(self, name: str, context: PluginContext) -> list[Callable[[PluginContext], Any]]:
        hooks = []
        for plugin in self.plugins:
            disabled = plugin_attr(plugin, "disabled")
            if callable(disabled):
                disabled = disabled(context)
            hook = plugin_attr(plugin, name)
            if not disabled and hook is not None:
                hooks.append(hook)
        return hooks

    def _call_hooks(self, name: str, signal: AbortSignal, **fields: Any) -> None:
        context = PluginContext(self, signal, **fields)
        # Hooks that close a turn must be able to await even after an abort.
        wait_signal = None if name in _CLOSING_HOOKS else signal
        for hook in self._hooks(name, context):
            resolve(hook(context), wait_signal)

    def _call_hooks_logged(self, name: str, signal: AbortSignal, **fields: Any) -> int:
        """Call every hook, logging failures: error and cleanup hooks must not mask the turn's outcome."""
        context = PluginContext(self, signal, **fields)
        hooks = self._hooks(name, context)
        for hook in hooks:
            try:
                resolve(hook(context))
            except Exception:
                logger.exception("%s hook failed", name)
        return len(hooks)

    def _call_error_hooks(self, error: Exception, signal: AbortSignal) -> bool:
        """Run every `on_error` hook; return whether there was any (else the caller re-raises)."""
        return self._call_hooks_logged("on_error", signal, error=error) > 0


def _update_metadata(message: dict[str, Any], chunk: Mapping[str, Any]) -> None:
    metadata = message.get("metadata")
    if not isinstance(metadata, dict):
        metadata = message["metadata"] = {}
    if chunk.get("created") is not None:
        metadata["createdAt"] = chunk["created"]
    metadata["updatedAt"] = int(time.time())
    # `choices` is folded into the message itself; copying it too would only bloat metadata.
    metadata.update({k: v for k, v in chunk.items() if k not in ("created", "choices")})


def _first_choice(chunk: Mapping[str, Any]) -> Mapping[str, Any] | None:
    # Only choice 0 is used, as in 0.4; n > 1 is not supported.
    for choice in chunk.get("choices") or ():
        if isinstance(choice, Mapping) and choice.get("index") == 0:
            return choice
    return None
