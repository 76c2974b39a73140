"""Provider-safe tool names (docs/models.md): clients may name tools anything non-empty
(`github__search.repos`, slashes, 200 characters), while OpenAI and Anthropic accept only
`^[a-zA-Z0-9_-]{1,64}$`. A name that already fits is sent as it is; any other is sent as an alias
(its safe characters, cut short, and a hash of the whole name, so two names never share one), and
the model's calls are mapped back, so every event and stored call carries the client's own name.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from typing import Any

from providers.base import Delta, ModelRequest, ToolCallDelta

SAFE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def alias_of(name: str) -> str:
    if SAFE.match(name):
        return name
    stem = re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:52] or "tool"
    return f"{stem}_{hashlib.sha256(name.encode()).hexdigest()[:10]}"


class ToolAliases:
    """The aliases of one request's tools, both ways."""

    def __init__(self, names: list[str]):
        self.to_alias = {name: alias_of(name) for name in names}
        self.to_name = {alias: name for name, alias in self.to_alias.items()}

    @property
    def needed(self) -> bool:
        return any(name != alias for name, alias in self.to_alias.items())

    def request(self, request: ModelRequest) -> ModelRequest:
        """`request` with its tools, tool choice and the history's tool calls under their aliases."""
        if not self.needed:
            return request
        # The offline model matches a tool's display name in the user's text: it keeps the client's.
        tools = [replace(tool, name=self.to_alias.get(tool.name, tool.name), display_name=tool.display_name or tool.name)
                 for tool in request.tools]
        choice = request.tool_choice
        if isinstance(choice, dict) and isinstance(choice.get("name"), str):
            choice = {**choice, "name": self.to_alias.get(choice["name"], choice["name"])}
        return replace(request, tools=tools, tool_choice=choice,
                       messages=[self._message(m) for m in request.messages])

    def _message(self, message: dict[str, Any]) -> dict[str, Any]:
        calls = message.get("tool_calls")
        if not calls:
            return message
        return {**message, "tool_calls": [
            {**call, "function": {**call["function"], "name": alias_of(call["function"]["name"])}}
            for call in calls]}

    def delta(self, delta: Delta) -> Delta:
        """A delta with the client's own tool name back."""
        if isinstance(delta, ToolCallDelta) and delta.name and delta.name in self.to_name:
            original = self.to_name[delta.name]
            return delta if original == delta.name else replace(delta, name=original)
        return delta
