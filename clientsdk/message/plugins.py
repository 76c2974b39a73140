"""The default plugins every engine starts with: fallback role, thinking and length."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .context import Plugin, PluginContext

CONTINUE_CONTENT = "Please continue with your previous answer."


class FallbackRolePlugin(Plugin):
    """Sends messages whose `role` is empty with `fallback_role` instead.

    The streamed assistant message starts with `role: ""` and keeps it when
    the provider never sends a role (or the request was aborted first); the
    model would reject it in the next request. Only the request copy changes.
    """

    name = "fallbackRole"

    def __init__(self, fallback_role: str = "assistant", **options: Any):
        super().__init__(**options)
        self.fallback_role = fallback_role

    def on_before_request(self, context: PluginContext) -> None:
        body = context.request_body
        body["messages"] = [
            {**message, "role": message.get("role") or self.fallback_role} if "role" in message else message
            for message in body["messages"]
        ]


class ThinkingPlugin(Plugin):
    """Sets `state["thinking"]` on the streamed message while `reasoning_content` streams.

    The flag is removed at turn end because a non-streamed answer or an abort
    never sends the chunk that would turn it off.
    """

    name = "thinking"

    def on_completion_chunk(self, context: PluginContext) -> None:
        choice = context.choice or {}
        reasoning = (choice.get("message") or {}).get("reasoning_content") or (
            choice.get("delta") or {}
        ).get("reasoning_content")
        state = context.current_message.get("state")
        if not isinstance(state, dict):
            state = context.current_message["state"] = {}
        state["thinking"] = isinstance(reasoning, str)

    def on_turn_end(self, context: PluginContext) -> None:
        if context.current_turn:
            state = context.current_turn[-1].get("state")
            if isinstance(state, dict):
                state.pop("thinking", None)


class LengthPlugin(Plugin):
    """On `finish_reason == "length"`, appends a user message asking to continue and requests again."""

    name = "length"

    def __init__(self, continue_content: str = CONTINUE_CONTENT, **options: Any):
        super().__init__(**options)
        self.continue_content = continue_content

    def on_after_request(self, context: PluginContext) -> None:
        last_choice = context.last_choice or {}
        if last_choice.get("finish_reason") == "length":
            context.append_message({"role": "user", "content": self.continue_content})
            context.request_next()


def fallback_role_plugin(fallback_role: str = "assistant", **options: Any) -> FallbackRolePlugin:
    return FallbackRolePlugin(fallback_role, **options)


def thinking_plugin(**options: Any) -> ThinkingPlugin:
    return ThinkingPlugin(**options)


def length_plugin(continue_content: str = CONTINUE_CONTENT, **options: Any) -> LengthPlugin:
    return LengthPlugin(continue_content, **options)


DEFAULT_PLUGIN_FACTORIES: tuple[Callable[[], Plugin], ...] = (
    fallback_role_plugin,
    thinking_plugin,
    length_plugin,
)


def default_plugins() -> list[Plugin]:
    """Fresh instances of the default plugins, in their fixed order."""
    return [factory() for factory in DEFAULT_PLUGIN_FACTORIES]
