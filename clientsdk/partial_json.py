"""A small tolerant parser for the prefix of a JSON document (streamed tool-call arguments).

The client must not import the server's `tools` package, so it carries its own, simpler parser:
close what is open and let `json.loads` do the work. From the end of the text it drops whatever
could still change meaning: an unfinished literal or number, a dangling key, a trailing comma or
colon, a truncated escape. The result is "what the text so far already says", or None.
"""
from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["parse_partial"]


def _scan(text: str) -> tuple[list[str], bool, bool]:
    """Return the stack of open closers, whether a string is open, and whether it ends in an escape."""
    closers: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            closers.append("]" if ch == "[" else "}")
        elif ch in "]}" and closers:
            closers.pop()
    return closers, in_string, escaped


def _complete(text: str) -> str:
    closers, in_string, escaped = _scan(text)
    if in_string:
        if escaped:
            text = text[:-1]
        # A truncated \uXXXX escape cannot be closed; cut it off.
        tail = text[-6:]
        cut = tail.rfind("\\u")
        if cut != -1 and len(tail) - cut < 6 and not tail[:cut].endswith("\\"):
            text = text[: len(text) - len(tail) + cut]
        # An open string that is an object key (no value yet) is dropped with its key below.
        text += '"'
    return text + "".join(reversed(closers))


def parse_partial(text: str) -> Any | None:
    """Best effort value of a JSON prefix. Never raises; None when nothing is known yet."""
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    # Shorten from the end until the closed-up text parses. Each step removes one character, so
    # partial literals (`tru`), numbers that may still grow (`12` -> `123`) and dangling keys fall
    # away; bounded by the text length, and tool arguments are small.
    candidate = text
    while candidate:
        value = _try_closed(candidate)
        if value is not _MISSING:
            return value
        candidate = candidate[:-1]
    return None


def _try_closed(candidate: str) -> Any:
    candidate = candidate.rstrip()
    # A trailing number outside a string may still grow ("1" then "12"): not final yet.
    _, in_string, _ = _scan(candidate)
    tail = _NUMBER_TAIL.search(candidate)
    if not in_string and tail and (tail.start() == 0 or candidate[tail.start() - 1] in " \t\n\r[{:,"):
        return _MISSING
    if not in_string and candidate.endswith(","):
        candidate = candidate[:-1].rstrip()
    if not in_string and candidate.endswith(":"):
        return _MISSING
    try:
        return json.loads(_complete(candidate))
    except ValueError:
        return _MISSING


_MISSING = object()
_NUMBER_TAIL = re.compile(r"[-+0-9.eE]+\Z")

