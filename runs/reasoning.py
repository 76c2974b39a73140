"""A model's reasoning as the stream shows it and the message keeps it (docs/models.md).

`@tambo-ai/client` 1.1.3 reads exactly THINKING_START, THINKING_TEXT_MESSAGE_START/CONTENT/END and
THINKING_END into `message.reasoning` (one string per THINKING_TEXT_MESSAGE_START) and
`reasoningDurationMS`. `ag-ui-protocol` 1.0 renamed these REASONING_* and no longer has the classes,
so they are declared here on its BaseEvent, in the shapes of `@ag-ui/core`'s schemas.
`Reasoning` is the step's bookkeeping: the events for each fragment and what is stored.
"""
from __future__ import annotations

import time
from typing import Iterator, Literal

from ag_ui.core import BaseEvent


class ThinkingStartEvent(BaseEvent):
    type: Literal["THINKING_START"] = "THINKING_START"  # type: ignore[assignment]
    title: str | None = None


class ThinkingTextMessageStartEvent(BaseEvent):
    type: Literal["THINKING_TEXT_MESSAGE_START"] = "THINKING_TEXT_MESSAGE_START"  # type: ignore[assignment]


class ThinkingTextMessageContentEvent(BaseEvent):
    type: Literal["THINKING_TEXT_MESSAGE_CONTENT"] = "THINKING_TEXT_MESSAGE_CONTENT"  # type: ignore[assignment]
    delta: str


class ThinkingTextMessageEndEvent(BaseEvent):
    type: Literal["THINKING_TEXT_MESSAGE_END"] = "THINKING_TEXT_MESSAGE_END"  # type: ignore[assignment]


class ThinkingEndEvent(BaseEvent):
    type: Literal["THINKING_END"] = "THINKING_END"  # type: ignore[assignment]


THINKING_EVENTS = (ThinkingStartEvent, ThinkingTextMessageStartEvent, ThinkingTextMessageContentEvent,
                   ThinkingTextMessageEndEvent, ThinkingEndEvent)


class Reasoning:
    """One step's reasoning: blocks of text (as the provider numbered them) and how long it took,
    measured from its first fragment to the first output that is not reasoning."""

    def __init__(self) -> None:
        self.blocks: list[list[str]] = []
        self._block: int | None = None
        self._open = False
        self._started: float | None = None
        self.duration_ms: int | None = None

    def feed(self, text: str, block: int) -> Iterator[BaseEvent]:
        if not text:
            return
        if not self._open:
            self._open = True
            self._started = time.monotonic()
            yield ThinkingStartEvent()
        if block != self._block:
            if self._block is not None:
                yield ThinkingTextMessageEndEvent()
            self._block = block
            self.blocks.append([])
            yield ThinkingTextMessageStartEvent()
        self.blocks[-1].append(text)
        yield ThinkingTextMessageContentEvent(delta=text)

    def close(self) -> Iterator[BaseEvent]:
        """Ends the reasoning once the model moves on to its answer (or the step ends)."""
        if not self._open:
            return
        self._open = False
        self._block = None
        if self._started is not None:
            self.duration_ms = int((time.monotonic() - self._started) * 1000)
        yield ThinkingTextMessageEndEvent()
        yield ThinkingEndEvent()

    def texts(self) -> list[str] | None:
        """What the message stores as `reasoning` (None: the model gave none)."""
        return ["".join(parts) for parts in self.blocks] or None
