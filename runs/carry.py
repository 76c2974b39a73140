"""What a taken-over run's client saw of the step in flight, and how the redone step carries it on.

`@tambo-ai/client`'s reducer (1.1.x, the one `@tambo-ai/react` uses) only adds to what it shows: it
ignores MESSAGES_SNAPSHOT and has no event that removes a message or replaces a message's text. So a
step redone under a new message id would show after the half-step the client saw, and the half-step
would stay on screen though the thread never stores it. Instead the redone step *is* the half-step,
carried on (docs/operations.md#takeover): same message id, the text seen kept as the start of its
text, the tool calls seen kept under their ids; the model is asked to continue the text seen (an
assistant message at the end of the request, which Anthropic's API continues as a prefill), and
whatever it sends again of what was seen (a model that answers anew) is dropped (`Echo`). The client
then only ever receives what comes after what it has, the same events any AG-UI client applies, and
the stored step is exactly what it shows.

Pure bookkeeping, no I/O: runs/recovery/takeover.py reads `Carried` from the run's event log,
runs/step.py applies it.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CarriedCall:
    """A tool call the client saw start in the step in flight (with its arguments so far)."""

    id: str
    name: str
    arguments: str = ""
    ended: bool = False  # the client saw its TOOL_CALL_END: its arguments were whole


@dataclass
class Carried:
    """The step in flight as the client saw it."""

    message_id: str | None = None  # None: the step had shown no message yet (reasoning at most)
    text: str = ""
    text_open: bool = False  # no TEXT_MESSAGE_END seen: the text goes on in the same message
    calls: list[CarriedCall] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)  # one string per THINKING_TEXT_MESSAGE_START

    def prefill(self) -> list[dict]:
        """The assistant message that ends the redone step's request: the text seen, to be continued.
        Trailing whitespace is left out (Anthropic refuses a prefill that ends with it)."""
        text = self.text.rstrip()
        return [{"role": "assistant", "content": text}] if text else []


class Echo:
    """Drops the part of a model's output that repeats what the client has seen already.

    Output is held while it could still be that repeat; once it is longer than `seen` and starts with
    it, the rest is new; once it differs, all of it is new (the model continued, as asked).
    """

    def __init__(self, seen: str):
        self.seen = seen
        self._held = ""
        self.matched: bool | None = None if seen else True  # None while undecided

    def feed(self, piece: str) -> str | None:
        """What of the output so far is new and not yet returned; None while it is held."""
        if self.matched is not None:
            return piece
        held = self._held + piece
        if self.seen.startswith(held) and held != self.seen:
            self._held = held
            return None
        self._held = ""
        self.matched = held.startswith(self.seen)
        return held[len(self.seen):] if self.matched else held

    def flush(self) -> str:
        """At the end of the output: what is still held (an output shorter than `seen`: not a repeat of
        it, so new); "" when nothing is."""
        held, self._held = self._held, ""
        if self.matched is None:
            self.matched = False
        return held
