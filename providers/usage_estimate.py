"""The tokens one model call sent and received, for budgets and the usage record (docs/abuse-and-limits.md).

The vendor's own count is used whenever it reported one. A call that reported none is charged an
estimate instead, never nothing: a stream the client left (cancel, disconnect), one the vendor cut or
that timed out or was stopped by a shutdown, and every call of a vendor that ignores `include_usage`.
No tokenizer is downloaded at run time: the input is the one estimate of providers/estimate.py (a message's
characters over CHARS_PER_TOKEN plus MESSAGE_OVERHEAD tokens of framing, as the context budget counts it);
the output is the characters received (text, reasoning, tool names and arguments) over CHARS_PER_TOKEN.
An estimated usage carries `"estimated": True`.
"""
from __future__ import annotations

from typing import Any

from providers.base import Delta, ReasoningDelta, StepEnd, TextDelta, ToolCallDelta
from providers.estimate import chars_tokens, prompt_tokens


class CallTally:
    """Watches one model call's deltas; `usage()` is the vendor's usage, or the estimate without one.

    `see(delta)` costs one isinstance chain and a length per delta; the input is estimated only when
    the estimate is asked for (the vendor reported nothing)."""

    def __init__(self, messages: list[dict[str, Any]]):
        self._messages = messages
        self.output_chars = 0
        self.deltas = 0
        self.reported: dict[str, Any] | None = None

    def see(self, delta: Delta) -> None:
        self.deltas += 1
        if isinstance(delta, TextDelta) or isinstance(delta, ReasoningDelta):
            self.output_chars += len(delta.text)
        elif isinstance(delta, ToolCallDelta):
            self.output_chars += len(delta.arguments) + len(delta.name or "")
        elif isinstance(delta, StepEnd) and delta.usage:
            self.reported = delta.usage

    def see_text(self, text: str, usage: dict[str, Any] | None) -> None:
        """A whole, non-streamed answer (a thread name, suggestions)."""
        self.deltas += 1
        self.output_chars += len(text)
        if usage:
            self.reported = usage

    def usage(self) -> dict[str, Any]:
        if self.reported:
            return self.reported
        prompt = prompt_tokens(self._messages)
        completion = chars_tokens(self.output_chars)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                "estimated": True}
