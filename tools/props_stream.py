"""Component props streamed as RFC 6902 JSON Patch operations (spec section 6).

The model streams a component's props as the JSON text of its tool-call arguments. After every
fragment, `PropsStream.feed` returns the operations that turn the props the client has seen so
far into the props the text now determines, so that applying every emitted list in order to `{}`
always reproduces the known props exactly.

`tambo.component.props_delta` events carry these lists; an empty list means "nothing new" and
the caller sends no event.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonpatch

from tools.partial_json import parse_partial

__all__ = ["InvalidArguments", "PropsStream"]


class InvalidArguments(ValueError):
    """The complete tool-call arguments are not a JSON object."""

    code = "INVALID_TOOL_ARGUMENTS"


class PropsStream:
    """Folds streamed argument fragments into props and the JSON Patch that reaches them.

    Not thread-safe; one instance per component tool call. Each `feed` re-parses the whole text
    received so far, which is linear in its length: fine for props of a few kilobytes.
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._props: dict[str, Any] = {}
        self._finished = False

    @property
    def props(self) -> dict[str, Any]:
        """A copy of the props known so far (what the emitted patches add up to)."""
        return copy.deepcopy(self._props)

    @property
    def text(self) -> str:
        """The argument text received so far."""
        return "".join(self._parts)

    def feed(self, fragment: str) -> list[dict[str, Any]]:
        """Add a fragment of the arguments text; return the new operations (maybe none)."""
        if self._finished:
            raise RuntimeError("PropsStream.feed() called after finish()")
        if not fragment:
            return []
        self._parts.append(fragment)
        known = parse_partial(self.text)
        # Props are an object. Until the text opens one there is nothing to show; if the model
        # sends something else, finish() reports it.
        if not isinstance(known, dict):
            return []
        return self._advance(known)

    def finish(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Parse the complete text strictly; return the final props and the last operations.

        Raises InvalidArguments when the text is not a JSON object. A stream whose text is
        only whitespace is taken as `{}`: some models send no arguments for a tool without
        required parameters.
        """
        self._finished = True
        text = self.text
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
        return final, self._advance(final)

    def _advance(self, new: dict[str, Any]) -> list[dict[str, Any]]:
        # `new` is a fresh parse that nobody else holds (or, after finish(), no diff follows), and
        # make_patch copies the values it puts into operations: what the caller does with the
        # operations cannot change what the next diff starts from.
        operations: list[dict[str, Any]] = jsonpatch.make_patch(self._props, new).patch
        self._props = new
        return operations
