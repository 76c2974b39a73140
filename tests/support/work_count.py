"""Counting the work a streaming fold does, instead of timing it.

Two counts, for the two ways a fold turns quadratic: `Fragment` is a str whose concatenations count
the characters they copy (`text += fragment` calls its `__radd__` with the text so far, so copying
the growing text per fragment shows up; joining a list of fragments copies each once and counts
nothing), and `counting_calls` counts Python function calls, as tests/tools/test_props_stream_scale.py
does, for work that grows by re-reading what came before.
"""
from __future__ import annotations

import gc
import sys
from contextlib import contextmanager
from typing import Iterator


class CopyCounter:
    def __init__(self) -> None:
        self.characters = 0


class Fragment(str):
    """A piece of streamed text that counts what `+` copies when it is appended to a string."""

    counter: CopyCounter

    def __new__(cls, value: str, counter: CopyCounter) -> "Fragment":
        fragment = super().__new__(cls, value)
        fragment.counter = counter
        return fragment

    def __radd__(self, other: str) -> str:
        self.counter.characters += len(other) + len(self)
        return str.__add__(str(other), str(self))

    def __add__(self, other: str) -> str:
        self.counter.characters += len(self) + len(other)
        return str.__add__(str(self), str(other))


def fragments(text: str, size: int) -> tuple[list[Fragment], CopyCounter]:
    counter = CopyCounter()
    return [Fragment(text[i:i + size], counter) for i in range(0, len(text), size)], counter


class CallCounter:
    def __init__(self) -> None:
        self.calls = 0


@contextmanager
def counting_calls() -> Iterator[CallCounter]:
    """Counts Python function calls made inside the block. The cyclic garbage collector is off
    meanwhile: a collection would run finalizers of whatever the process left behind, and count them."""
    counter = CallCounter()

    def count(frame, event, arg):
        if event == "call":
            counter.calls += 1

    gc.disable()
    sys.setprofile(count)
    try:
        yield counter
    finally:
        sys.setprofile(None)
        gc.enable()
