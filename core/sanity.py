"""Input sanity: the one JSON parser of every route, and the checks for paths, queries and headers.

Everything a client sends passes through here before any service or the database sees it, and each
refusal is a 400 `VALIDATION_ERROR` naming the field (`message.content[0].text`, `query.userKey`,
`path`, `header.x-api-key`). The limits, and why:

- **NUL** (U+0000) anywhere: PostgreSQL can store it neither in text nor in JSON.
- **Lone UTF-16 surrogates** (`"\\ud800"` with no partner): they are not Unicode characters and
  cannot be encoded as UTF-8, so a stored one breaks every later answer that carries it.
- **Nesting deeper than `MAX_JSON_DEPTH` (64)** arrays/objects: refused before anything recursive
  (pydantic, the database driver, `json.dumps`) can run out of stack. Real payloads (JSON Schemas,
  component props) stay far below it.
- **Integers beyond ±`MAX_SAFE_INTEGER` (2^53 − 1)**: the official clients are JavaScript, whose
  numbers are IEEE doubles; a larger integer would be read back as a different number (RFC 7493,
  I-JSON, section 2.2). This also keeps Python's 4,300-digit conversion limit far away.
- **`NaN`, `Infinity`, `-Infinity`** and numbers that overflow a double (`1e999`): not JSON (RFC
  8259), and neither PostgreSQL's `jsonb` nor a browser's `JSON.parse` accepts them.

String lengths are the pydantic models' business (`clientsdk/wire.py`), kept equal to the columns.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any, Iterator

import orjson

from core.problems import Problem

MAX_JSON_DEPTH = 64
MAX_SAFE_INTEGER = 2**53 - 1
# How deep the standard library's (recursive) parser may go on the exact path: far below Python's
# recursion limit of 1,000, and deep enough that a body over MAX_JSON_DEPTH is still parsed and
# refused with the path of the field where it went too deep.
_EXACT_PARSE_DEPTH = 256

# Any integer beyond MAX_SAFE_INTEGER has 16 digits or more. orjson silently turns such integers
# into floats, so a body that holds a run of 16 digits takes the exact (slower) path instead.
_LONG_DIGITS = re.compile(rb"[0-9]{16}")
_SURROGATE = re.compile("[\ud800-\udfff]")
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


class InputError(Problem):
    """A 400 `VALIDATION_ERROR` about one field; `field` is also on the problem body."""

    def __init__(self, field: str, detail: str, **extra: Any):
        super().__init__(400, "VALIDATION_ERROR", detail, field=field, **extra)
        self.field = field


def loads(raw: bytes | str) -> Any:
    """Parse a JSON request body and check every value in it; raises InputError.

    This is the only JSON parser of request bodies: DRF's parser, the run views and the gateway all
    call it, so the same input gets the same answer on every route.
    """
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    value = _MISSING
    if not _LONG_DIGITS.search(raw):
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # the exact path below says what is wrong, and where
    if value is _MISSING:
        value = _loads_exact(raw)
    check_value(value)
    return value


def check_value(value: Any, root: str = "") -> None:
    """Refuse a decoded JSON value holding what this module refuses (see the module docstring).

    Iterative, so that a deep value fails on depth, not on Python's recursion limit.
    """
    for path, item, depth, is_key in _walk(value, root):
        field = path or "body"
        if depth > MAX_JSON_DEPTH:
            raise InputError(field, f"{field} is nested deeper than {MAX_JSON_DEPTH} levels.")
        if isinstance(item, str):
            check_text(item, field, what=f"A key of {field}" if is_key else field)
        elif isinstance(item, _Refused):
            raise InputError(field, f"{field}: {item.reason}")
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int) and abs(item) > MAX_SAFE_INTEGER:
            raise InputError(field, f"{field}: {_TOO_BIG.reason}")
        elif isinstance(item, float) and not math.isfinite(item):
            raise InputError(field, f"{field}: {_NON_FINITE.reason}")


def check_text(text: str, field: str, what: str | None = None) -> None:
    """Refuse NUL and lone surrogates in one string (a value, a key, a query value, a path)."""
    if "\x00" in text:
        raise InputError(field, f"{what or field} must not contain NUL (\\u0000) characters.")
    # A string decoded from valid JSON or UTF-8 holds surrogates only when they are unpaired.
    if _SURROGATE.search(text):
        raise InputError(field, f"{what or field} must not contain unpaired UTF-16 surrogates (such as \\ud800).")


def check_request(path: str, query: Iterator[tuple[str, list[str]]], headers: dict[str, Any]) -> None:
    """Refuse NUL and lone surrogates in a request's path, query parameters and headers."""
    check_text(path, "path")
    for name, values in query:
        check_text(name, "query")
        for value in values:
            check_text(value, f"query.{name}")
    for key, value in headers.items():
        if key.startswith("HTTP_") and isinstance(value, str):
            check_text(value, "header." + key[5:].lower().replace("_", "-"))


# --- The exact path ------------------------------------------------------------------------------

_MISSING: Any = object()


class _Refused:
    """Stands in for a number the exact parser must not build, so the walk can name its field."""

    def __init__(self, reason: str):
        self.reason = reason


_NON_FINITE = _Refused("NaN and infinite numbers are not JSON.")
_TOO_BIG = _Refused(f"integers must be between -{MAX_SAFE_INTEGER} and {MAX_SAFE_INTEGER}.")


def _parse_int(token: str) -> int | _Refused:
    # Decided on the digits, before int() could hit Python's 4,300-digit limit.
    if len(token.lstrip("-")) > 16:
        return _TOO_BIG
    return int(token)


def _loads_exact(raw: bytes) -> Any:
    """The standard library's parser, made safe: depth checked first, big numbers kept as markers."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("body", "The request body is not valid UTF-8.") from None
    if _too_deep(text, _EXACT_PARSE_DEPTH):
        raise InputError("body", f"The request body is nested deeper than {MAX_JSON_DEPTH} levels.")
    try:
        return json.loads(text, parse_int=_parse_int, parse_constant=lambda _: _NON_FINITE)
    except json.JSONDecodeError as error:
        raise InputError("body", "The request body is not valid JSON.", line=error.lineno,
                         column=error.colno) from None
    except RecursionError:  # not reachable after _too_deep; kept so that a miscount is still a 400
        raise InputError("body", f"The request body is nested deeper than {MAX_JSON_DEPTH} levels.") from None


def _too_deep(text: str, limit: int) -> bool:
    """Whether the brackets outside strings nest deeper than `limit`, counted without recursion."""
    depth = 0
    for bracket in _BRACKET.finditer(_JSON_STRING.sub("", text)):
        depth += 1 if bracket.group() in "[{" else -1
        if depth > limit:
            return True
    return False


def _walk(value: Any, root: str) -> Iterator[tuple[str, Any, int, bool]]:
    """(path, item, depth, is_key) for every value and object key, parents before children.

    A key is reported at the path of its object: a key that cannot be shown cannot be a path.
    """
    stack = [(root, value, 0)]
    while stack:
        path, item, depth = stack.pop()
        if isinstance(item, dict):
            depth += 1
            yield path, None, depth, False
            for key in item:
                yield path, key, depth, True
            stack.extend((_child(path, key), child, depth) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            depth += 1
            yield path, None, depth, False
            stack.extend((f"{path}[{i}]", child, depth) for i, child in reversed(list(enumerate(item))))
        else:
            yield path, item, depth, False


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
