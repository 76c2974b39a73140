"""A tolerant parser for a prefix of a JSON document: the one both sides of the wire use.

Tool-call arguments arrive from the model a few characters at a time. To stream component props
(docs/protocol.md#components) the server needs, after every fragment, the value that the text received so far
already determines (`tools/props_stream.py` feeds a `PartialParser`, so 200 KB of props are not
re-parsed per fragment); the client shows streamed tool-call arguments the same way
(`clientsdk.snapshot`). It lives in the client's distribution, which the server depends on, and
imports nothing but the standard library.

`parse_partial` returns the value the text determines, and nothing that could still change:

- open strings, arrays and objects are closed at the end of the text;
- an object key without a complete value is dropped (`{"a": ` and `{"a": tr` give `{}`);
- a literal is kept only once it is complete (`tru` is dropped, `true` is kept);
- a number is kept only once a delimiter follows it: `[1` gives `[]`, because the next fragment may
  turn `1` into `12` or `1.5`. Pass `complete=True` when the text is known to be the whole
  document, so that a trailing number (for instance the document `42`) counts as finished;
- a truncated escape (`"a\\`, `"a\\u12`) is dropped, and so is a UTF-16 high surrogate escape at the
  very end, because the low half that may follow would turn it into a different character.

The promise that makes the result safe to diff: for any prefix of a valid JSON document, the
result is "contained in" the final value. Strings are prefixes of their final string, arrays are
prefixes of their final array (the last element possibly partial), objects hold a subset of the
final keys, and every number and literal equals its final value.

The parser is iterative (no recursion limit) and never raises. On text that is not a prefix of
valid JSON it stops at the first character it cannot use and returns what it had built.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["PartialParser", "parse_partial"]

_MISSING: Any = object()

_WHITESPACE = " \t\n\r"
_NUMBER_CHARS = frozenset("0123456789+-.eE")
_NUMBER_RE = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?\Z")
# Plain string characters up to the next quote or backslash.
_STRING_CHUNK_RE = re.compile(r'[^"\\]*')
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX_RE = re.compile(r"[0-9a-fA-F]{4}\Z")
# Literals json.loads accepts. NaN and the infinities are not JSON, but json.dumps writes them.
_LITERALS = {"true": True, "false": False, "null": None, "NaN": float("nan"), "Infinity": float("inf")}
_NEGATIVE_INFINITY = "-Infinity"

def parse_partial(text: str, *, complete: bool = False) -> Any | None:
    """Return the value that `text`, a prefix of a JSON document, already determines.

    Returns None while nothing is known yet (empty text, `-`, `tr`, a lone number without
    `complete`). Note that a document that is exactly `null` also gives None. Never raises: every
    step checks its input, so an exception here is a bug, and it is left to surface as one.
    """
    return _parse(text, complete)


class _Document:
    """The value being built: the root and the open containers, innermost last."""

    def __init__(self) -> None:
        self.root: Any = _MISSING
        self.stack: list[dict[str, Any] | list[Any]] = []
        # The key waiting for its value in the innermost object. It is consumed as soon as the
        # value is attached, so one variable serves every level.
        self.key = ""

    def attach(self, value: Any) -> None:
        if not self.stack:
            self.root = value
        elif isinstance(self.stack[-1], list):
            self.stack[-1].append(value)
        else:
            self.stack[-1][self.key] = value

    def open(self, container: dict[str, Any] | list[Any]) -> None:
        self.attach(container)
        self.stack.append(container)

    def in_list(self) -> bool:
        return isinstance(self.stack[-1], list)


# The parser is a loop over states, one function each. Given the next significant character at
# text[i], a step consumes a token and returns (next index, next step), or None as the next step
# to stop: the text ended inside a token, or it is not valid JSON.
_Step = Callable[[_Document, str, int, bool], "tuple[int, _Step | None]"]


def _parse(text: str, complete: bool) -> Any | None:
    doc = _Document()
    n = len(text)
    i = 0
    step: _Step | None = _step_value
    while step is not None:
        while i < n and text[i] in _WHITESPACE:
            i += 1
        if i >= n:
            break
        i, step = step(doc, text, i, complete)
    return None if doc.root is _MISSING else doc.root


def _step_value(doc: _Document, text: str, i: int, complete: bool) -> tuple[int, _Step | None]:
    c = text[i]
    if c == "{":
        doc.open({})
        return i + 1, _step_key_or_close
    if c == "[":
        doc.open([])
        return i + 1, _step_value_or_close
    if c == '"':
        value, i, finished = _scan_string(text, i)
        doc.attach(value)  # a partial string is certain as far as it goes
        return i, _step_after_value if finished else None
    value, i = _scan_scalar(text, i, complete)
    if value is _MISSING:
        return i, None
    doc.attach(value)
    return i, _step_after_value


def _step_value_or_close(doc: _Document, text: str, i: int, complete: bool) -> tuple[int, _Step | None]:
    if text[i] == "]":
        doc.stack.pop()
        return i + 1, _step_after_value
    return _step_value(doc, text, i, complete)


def _step_key_or_close(doc: _Document, text: str, i: int, complete: bool) -> tuple[int, _Step | None]:
    if text[i] == "}":
        doc.stack.pop()
        return i + 1, _step_after_value
    return _step_key(doc, text, i, complete)


def _step_key(doc: _Document, text: str, i: int, complete: bool) -> tuple[int, _Step | None]:
    if text[i] != '"':
        return i, None
    key, i, finished = _scan_string(text, i)
    if not finished:
        return i, None  # a partial key is dropped: we cannot know which key it will be
    doc.key = key
    return i, _step_colon


def _step_colon(doc: _Document, text: str, i: int, complete: bool) -> tuple[int, _Step | None]:
    if text[i] != ":":
        return i, None
    return i + 1, _step_value


def _step_after_value(doc: _Document, text: str, i: int, complete: bool) -> tuple[int, _Step | None]:
    if not doc.stack:
        return i, None  # the document is complete; ignore whatever follows
    c = text[i]
    if c == ",":
        return i + 1, _step_value if doc.in_list() else _step_key
    if c == ("]" if doc.in_list() else "}"):
        doc.stack.pop()
        return i + 1, _step_after_value
    return i, None


def _scan_scalar(text: str, i: int, complete: bool) -> tuple[Any, int]:
    """Scan a number or literal starting at `text[i]`.

    Returns (_MISSING, i) when the token is unfinished, could still change, or is invalid.
    """
    for literal, value in _LITERALS.items():
        if text.startswith(literal, i):
            return value, i + len(literal)
    if text.startswith(_NEGATIVE_INFINITY, i):
        return float("-inf"), i + len(_NEGATIVE_INFINITY)

    j = i
    while j < len(text) and text[j] in _NUMBER_CHARS:
        j += 1
    if j == i:
        return _MISSING, i  # a prefix of a literal (`tr`) or a character that starts nothing
    if j == len(text) and not complete:
        return _MISSING, i  # the next fragment may still extend this number
    token = text[i:j]
    match = _NUMBER_RE.match(token)
    if match is None:
        return _MISSING, i
    # The same conversions json.loads makes.
    if match.group(1) or match.group(2):
        return float(token), j
    try:
        return int(token), j
    except ValueError:
        # Python refuses to convert integers of more than 4,300 digits (sys.set_int_max_str_digits);
        # json.loads fails on them too, so the text is treated as invalid from here.
        return _MISSING, i


def _scan_string(text: str, i: int) -> tuple[str, int, bool]:
    """Scan the string whose opening quote is at `text[i]`.

    Returns (decoded value so far, index after the string, finished). When the text ends inside
    the string, the value holds every character that is certain and finished is False.
    """
    n = len(text)
    parts: list[str] = []
    j = i + 1
    while True:
        end = _STRING_CHUNK_RE.match(text, j).end()  # type: ignore[union-attr]
        if end > j:
            parts.append(text[j:end])
        j = end
        if j >= n:
            return "".join(parts), j, False
        if text[j] == '"':
            return "".join(parts), j + 1, True
        # A backslash.
        if j + 1 >= n:
            return "".join(parts), n, False
        esc = text[j + 1]
        if esc in _SIMPLE_ESCAPES:
            parts.append(_SIMPLE_ESCAPES[esc])
            j += 2
            continue
        if esc != "u":
            return "".join(parts), n, False  # invalid escape: stop here
        code = _hex4(text, j + 2)
        if code is None:
            return "".join(parts), n, False  # truncated (or invalid) \u escape
        j += 6
        if 0xD800 <= code <= 0xDBFF:
            # A high surrogate. json.loads combines it with a following \uDC00-\uDFFF escape and
            # otherwise keeps it alone; until we can tell which, it is not certain.
            follow = text[j : j + 6]
            if len(follow) < 6 and "\\u".startswith(follow[:2]) and _is_hex_prefix(follow[2:]):
                return "".join(parts), n, False
            low = _hex4(text, j + 2) if follow.startswith("\\u") else None
            if low is not None and 0xDC00 <= low <= 0xDFFF:
                parts.append(chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)))
                j += 6
                continue
        parts.append(chr(code))


def _hex4(text: str, start: int) -> int | None:
    digits = text[start : start + 4]
    if not _HEX_RE.match(digits):
        return None
    return int(digits, 16)


def _is_hex_prefix(s: str) -> bool:
    return all(ch in "0123456789abcdefABCDEF" for ch in s)


class PartialParser:
    """`parse_partial` for a text that arrives in fragments, scanning each character about once.

    `feed(fragment)` continues where the last feed stopped; `value` is then exactly what
    `parse_partial(all text so far)` returns. The parser keeps only the unfinished token it had to
    stop in (a partial string, number or literal, re-scanned when the next fragment arrives), so a
    long document costs linear time instead of a full re-parse per fragment. `value` is the live
    document: it changes on later feeds, so a caller that keeps it copies it.
    """

    def __init__(self) -> None:
        self._doc = _Document()
        self._step: _Step = _step_value
        self._pending = ""
        self._undo: tuple | None = None  # where the stopped token's partial value was attached

    @property
    def value(self) -> Any | None:
        return None if self._doc.root is _MISSING else self._doc.root

    def feed(self, fragment: str) -> None:
        text = self._pending + fragment
        self._revert()
        doc, step, i, n = self._doc, self._step, 0, len(text)
        while True:
            while i < n and text[i] in _WHITESPACE:
                i += 1
            if i >= n:
                break
            mark = self._mark()
            j, following = step(doc, text, i, False)
            if following is None:
                # Stopped in an unfinished token (or at text it cannot use): keep the token's start
                # and remember the partial value it attached, to take it back before resuming.
                self._undo = mark if self._attached(mark) else None
                break
            i, step = j, following
        self._step = step
        self._pending = text[i:]

    def _mark(self) -> tuple:
        doc = self._doc
        if not doc.stack:
            return ("root", doc.root)
        container = doc.stack[-1]
        if isinstance(container, list):
            return ("list", container, len(container))
        return ("dict", container, doc.key, container.get(doc.key, _MISSING))

    def _attached(self, mark: tuple) -> bool:
        if mark[0] == "root":
            return self._doc.root is not mark[1]
        if mark[0] == "list":
            return len(mark[1]) != mark[2]
        return mark[1].get(mark[2], _MISSING) is not mark[3]

    def _revert(self) -> None:
        undo, self._undo = self._undo, None
        if undo is None:
            return
        if undo[0] == "root":
            self._doc.root = undo[1]
        elif undo[0] == "list":
            del undo[1][undo[2]:]
        elif undo[3] is _MISSING:
            undo[1].pop(undo[2], None)
        else:
            undo[1][undo[2]] = undo[3]
