"""Pure helpers that fold streamed deltas into a message and shape request messages."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

# Keys whose string value names a thing rather than accumulating text: a
# streamed `"type": "function"` or `"role": "assistant"` repeated in a later
# delta must not become "functionfunction" (0.4 doubled `role`).
_NAME_KEYS = frozenset({"type", "role"})


def combine_delta(target: dict[str, Any], source: Mapping[str, Any]) -> dict[str, Any]:
    """Merge one streamed delta `source` into `target` in place and return `target`.

    Rules per key: a missing or falsy target value takes the source value;
    str + str concatenates, except `type` and `role`, whose first non-empty
    value is kept; dict + dict merges recursively; two lists whose items all
    carry a non-negative integer `index` merge item by item on that index (holes left by a
    sparse index are `None`); other lists concatenate; any other pair keeps the
    target value. `source` is never mutated: values taken from it are copied, so
    a chunk can be replayed or logged after it was merged.
    """
    for key, source_value in source.items():
        target_value = target.get(key)
        if not target_value:
            target[key] = copy.deepcopy(source_value)
        elif isinstance(target_value, str) and isinstance(source_value, str):
            if key not in _NAME_KEYS:
                target[key] = target_value + source_value
        elif isinstance(target_value, list) and isinstance(source_value, list):
            if _all_indexed(target_value) and _all_indexed(source_value):
                target[key] = _merge_by_index(target_value, source_value)
            else:
                target[key] = target_value + copy.deepcopy(source_value)
        elif isinstance(target_value, dict) and isinstance(source_value, Mapping):
            combine_delta(target_value, source_value)
    return target


def _has_index(item: Any) -> bool:
    index = item.get("index") if isinstance(item, Mapping) else None
    return isinstance(index, int) and not isinstance(index, bool) and index >= 0


def _all_indexed(items: list[Any]) -> bool:
    # `None` holes come from an earlier sparse merge and must not turn the next
    # delta for the same list into a concatenation.
    return all(item is None or _has_index(item) for item in items)


def _merge_by_index(target: list[Any], source: list[Any]) -> list[Any]:
    by_index = {item["index"]: item for item in target if item is not None}
    for item in source:
        if item is None:
            continue
        existing = by_index.get(item["index"])
        if existing is None:
            by_index[item["index"]] = copy.deepcopy(item)
        else:
            combine_delta(existing, item)
    length = max(len(target), max(by_index, default=-1) + 1)
    result: list[Any] = [None] * length
    for index, item in by_index.items():
        result[index] = item
    return result


def filter_message_fields(
    message: Mapping[str, Any],
    keep: Iterable[str] | None = None,
    drop: Iterable[str] = (),
) -> dict[str, Any]:
    """Return a shallow copy of `message` with only the `keep` fields (all if empty) minus `drop`."""
    keep_set = set(keep or ())
    drop_set = set(drop)
    return {
        key: value
        for key, value in message.items()
        if (not keep_set or key in keep_set) and key not in drop_set
    }
