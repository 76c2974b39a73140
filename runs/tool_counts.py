"""The one count of a user turn's tool calls, and the limits it enforces (spec: a tool's maxCalls,
the per-turn total, identical calls).

A turn runs from the user's own message until the model answers without calling tools; it may span
several runs (each client tool answered starts another), so the count starts from the calls already
stored in the turn and the advance loop carries it on as the model calls more.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from threads.models import Message

LIMIT_NOTE = " Answer the user now without calling more tools."


def turn_limit(project_limit: int, server_limit: int) -> int:
    """The per-turn total that applies: the lower of the project's and the server's
    (MAX_TOOL_CALLS_PER_TURN bounds every project); 0 on either side means that side sets none."""
    limits = [limit for limit in (project_limit, server_limit) if limit]
    return min(limits) if limits else 0


def call_signature(name: str, arguments: Any) -> str:
    """What makes two calls identical: the tool and its arguments, whatever their key order."""
    return name + ":" + json.dumps(arguments, sort_keys=True, ensure_ascii=False)


@dataclass
class TurnToolCounts:
    max_identical: int
    turn_limit: int
    by_tool: dict[str, int] = field(default_factory=dict)
    identical: dict[str, int] = field(default_factory=dict)
    total: int = 0

    @classmethod
    def of_turn(cls, history: Iterable[Message], *, turn_limit: int, max_identical: int) -> TurnToolCounts:
        """The counts of the calls stored since the user's last own message (text or a resource,
        not a tool result): the current turn's calls so far."""
        counts = cls(max_identical=max_identical, turn_limit=turn_limit)
        for message in reversed(list(history)):
            if message.role == Message.Role.USER and any(b.get("type") in ("text", "resource")
                                                         for b in message.content):
                break
            if message.role != Message.Role.ASSISTANT:
                continue
            for block in message.content:
                if block.get("type") == "tool_use":
                    counts._add(block["name"], call_signature(block["name"], block.get("input")))
        return counts

    def _add(self, name: str, signature: str) -> None:
        self.by_tool[name] = self.by_tool.get(name, 0) + 1
        self.identical[signature] = self.identical.get(signature, 0) + 1
        self.total += 1

    def refuse(self, name: str, arguments: Any, max_calls: int | None) -> str | None:
        """The refusal for a call over a limit (the tool's own `max_calls`, the turn's total, the
        identical-call limit), else None and the call is counted."""
        signature = call_signature(name, arguments)
        if max_calls is not None and self.by_tool.get(name, 0) >= max_calls:
            return f"Tool call limit reached: {name} may be called at most {max_calls} times." + LIMIT_NOTE
        if self.turn_limit and self.total >= self.turn_limit:
            return f"Tool call limit reached: at most {self.turn_limit} tool calls per user message." + LIMIT_NOTE
        if self.identical.get(signature, 0) >= self.max_identical:
            return (f"Tool call limit reached: {name} was already called "
                    f"{self.max_identical} times with these same arguments." + LIMIT_NOTE)
        self._add(name, signature)
        return None
