"""Component props streamed as RFC 6902 JSON Patch operations (docs/protocol.md#components).

The model streams a component's props as the JSON text of its tool-call arguments. After every
fragment, `PropsStream.feed` returns the operations that turn the props the client has seen so
far into the props the text now determines, so that applying every emitted list in order to `{}`
always reproduces the known props exactly.

`tambo.component.props_delta` events carry these lists; an empty list means "nothing new" and
the caller sends no event.
"""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

import jsonpatch

from clientsdk.partial_json import PartialParser

__all__ = ["InvalidArguments", "PropsStream"]


class InvalidArguments(ValueError):
    """The complete tool-call arguments are not a JSON object."""

    code = "INVALID_TOOL_ARGUMENTS"


class PropsStream:
    """Folds streamed argument fragments into props and the JSON Patch that reaches them.

    Not thread-safe; one instance per component tool call. Incremental, so a long document costs
    the event loop no long pause: `feed` parses only the new text (PartialParser) and diffs only
    what can have changed. Because the text only grows, a value that is complete never changes:
    between two feeds, only the last member of each container on the document's rightmost path
    (its "spine") can change, and new members can only follow it. `finish` checks the result
    against a strict parse of the whole text, falling back to a full diff if they differ (a
    repeated key, say).
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._parser = PartialParser()
        self._spine: list[tuple[int, Any, Any]] = [(0, None, None)]  # the client starts from {}
        self._final: dict[str, Any] | None = None
        self._finished = False

    @property
    def props(self) -> dict[str, Any]:
        """A copy of the props known so far (what the emitted patches add up to)."""
        return copy.deepcopy(self._known())

    @property
    def text(self) -> str:
        """The argument text received so far."""
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def _known(self) -> dict[str, Any]:
        if self._final is not None:
            return self._final
        value = self._parser.value
        return value if isinstance(value, dict) else {}

    def feed(self, fragment: str) -> list[dict[str, Any]]:
        """Add a fragment of the arguments text; return the new operations (maybe none)."""
        if self._finished:
            raise RuntimeError("PropsStream.feed() called after finish()")
        if not fragment:
            return []
        self._parts.append(fragment)
        self._parser.feed(fragment)
        known = self._parser.value
        # Props are an object. Until the text opens one there is nothing to show; if the model
        # sends something else, finish() reports it.
        if not isinstance(known, dict):
            return []
        operations = _spine_diff(self._spine, known)
        self._spine = _spine_of(known)
        return operations

    def finish(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Parse the complete text strictly; return the final props and the last operations.

        Raises InvalidArguments when the text is not a JSON object. A stream whose text is
        only whitespace is taken as `{}`: some models send no arguments for a tool without
        required parameters.
        """
        known = self._known()
        text = self.text
        self._finished = True
        if not text.strip():
            final: Any = {}
        else:
            try:
                final = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InvalidArguments(
                    f"The tool-call arguments are not valid JSON ({exc.msg} at position {exc.pos})."
                ) from exc
        if not isinstance(final, dict):
            raise InvalidArguments(
                f"The tool-call arguments must be a JSON object, not {type(final).__name__}."
            )
        self._final = final
        if _same(known, final):
            return final, []
        # make_patch copies the values it puts into operations.
        return final, jsonpatch.make_patch(known, final).patch


_CONTAINER = object()  # the spine goes on into this member
_SCALAR = object()  # a number, literal or null: complete once seen


def _spine_of(root: dict[str, Any]) -> list[tuple[int, Any, Any]]:
    """(member count, last key or index, the last member: a str, _CONTAINER or _SCALAR) for each
    container on the rightmost path, from the root down."""
    spine = []
    node: Any = root
    while True:
        count = len(node)
        if not count:
            spine.append((0, None, None))
            return spine
        key = count - 1 if isinstance(node, list) else next(reversed(node))
        value = node[key]
        if isinstance(value, (dict, list)):
            spine.append((count, key, _CONTAINER))
            node = value
            continue
        spine.append((count, key, value if isinstance(value, str) else _SCALAR))
        return spine


def _spine_diff(spine: list[tuple[int, Any, Any]], root: dict[str, Any]) -> list[dict[str, Any]]:
    """The operations from the document `spine` was taken of to `root` (the same document, grown),
    in text order: the old last member's growth first, then new members, deepest first."""
    operations: list[dict[str, Any]] = []
    chain: list[tuple[Any, str, int]] = []
    node: Any = root
    path = ""
    for count, key, last in spine:
        chain.append((node, path, count))
        if not count:
            break
        member_path = f"{path}/{_pointer(key)}"
        if last is _CONTAINER:
            node, path = node[key], member_path
            continue
        if isinstance(last, str) and node[key] != last:
            operations.append({"op": "replace", "path": member_path, "value": node[key]})
        break
    for node, path, count in reversed(chain):
        members = (enumerate(node[count:], count) if isinstance(node, list)
                   else itertools.islice(node.items(), count, None))
        for key, value in members:
            operations.append({"op": "add", "path": f"{path}/{_pointer(key)}", "value": _copy(value)})
    return operations


def _pointer(key: Any) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def _copy(value: Any) -> Any:
    # Operations get their own copy: the parser goes on filling the live containers.
    return copy.deepcopy(value) if isinstance(value, (dict, list)) else value


def _same(a: Any, b: Any) -> bool:
    # == alone would call NaN unequal to itself; the JSON text is what the client compares.
    return a == b or json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
