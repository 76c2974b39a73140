"""AG-UI events → SSE bytes. Each event is encoded once; ready events are written together.

TEXT_MESSAGE_CONTENT, by far the most frequent event, is encoded from a bytes template with
orjson instead of through the pydantic model: the bytes are identical (tests/runs/test_sse.py
checks quotes, newlines, emoji, U+2028, backslashes and control characters against ag_ui's own
encoding), at a fraction of the cost. Several text deltas of one message that are ready together
go out as one event (`merge_text`), with the text unchanged; that happens when a run's events are
numbered (runs/stream/feeds.py), so every reader of the run sees the same events.
"""
from __future__ import annotations

import time
from typing import Iterable

import orjson
from ag_ui.core import BaseEvent, TextMessageContentEvent


_TEXT_FIELDS = dict(TextMessageContentEvent.model_construct(message_id="", delta="").__dict__)
_TEXT_SET = frozenset({"message_id", "delta"})


def text_content(message_id: str, delta: str) -> TextMessageContentEvent:
    """A TEXT_MESSAGE_CONTENT event for values already checked (a non-empty str delta), made without
    pydantic: `model_construct` costs several times this per delta, and a long answer has thousands.
    The instance is the same as `model_construct`'s (its fields, fields set and extras)."""
    event = object.__new__(TextMessageContentEvent)
    fields = _TEXT_FIELDS.copy()
    fields["message_id"], fields["delta"] = message_id, delta
    object.__setattr__(event, "__dict__", fields)
    object.__setattr__(event, "__pydantic_fields_set__", set(_TEXT_SET))
    object.__setattr__(event, "__pydantic_extra__", {})
    object.__setattr__(event, "__pydantic_private__", None)
    return event


def encode_event(event: BaseEvent) -> bytes:
    if type(event) is TextMessageContentEvent and event.raw_event is None:
        timestamp = event.timestamp
        if timestamp is None:
            # What pydantic's assignment does for this model (no validation on assignment), without
            # its Python-level __setattr__ per delta.
            timestamp = event.__dict__["timestamp"] = int(time.time() * 1000)
            event.__pydantic_fields_set__.add("timestamp")
        return b'data: {"type":"TEXT_MESSAGE_CONTENT","timestamp":%d,"messageId":%b,"delta":%b}\n\n' % (
            timestamp, orjson.dumps(event.message_id), orjson.dumps(event.delta))
    if event.timestamp is None:
        event.timestamp = int(time.time() * 1000)
    return b"data: " + event.model_dump_json(by_alias=True, exclude_none=True).encode() + b"\n\n"


def merge_text(events: Iterable[BaseEvent]) -> list[BaseEvent]:
    """The same events, with each run of consecutive TEXT_MESSAGE_CONTENT of one message folded
    into one whose delta is their deltas joined (and whose timestamp is the first one's)."""
    merged: list[BaseEvent] = []
    parts: list[str] = []
    for event in events:
        if type(event) is TextMessageContentEvent and event.raw_event is None:
            last = merged[-1] if merged else None
            if parts and type(last) is TextMessageContentEvent and last.message_id == event.message_id:
                parts.append(event.delta)
                continue
            _close(merged, parts)
            parts = [event.delta]
        else:
            _close(merged, parts)
            parts = []
        merged.append(event)
    _close(merged, parts)
    return merged


# A merged text event stays under this size (its parts' encodings added up): a reader takes events
# a slice at a time (runs/stream/feeds.py TAKE_BYTES), and one huge event would be a slice of its own.
MERGE_BYTES = 32 * 1024


def merge_encoded(items: list[tuple[bytes, BaseEvent | None]]) -> list[tuple[bytes, BaseEvent | None]]:
    """Events encoded one by one (runs/stream/guard.py), with each run of consecutive TEXT_MESSAGE_CONTENT
    of one message folded into one event, up to MERGE_BYTES: the bytes `merge_text` and `encode_event`
    would give, spliced from the parts' own encodings (their escaped deltas joined), so a batch costs
    no model and no second encoding. A merged run's event is its first part: what the feed reads of
    it is its kind (not final). The deltas each encoded alone, so this cannot fail where they did not."""
    out: list[tuple[bytes, BaseEvent | None]] = []
    i = 0
    while i < len(items):
        data, event = items[i]
        j, size = i + 1, len(data)
        if _is_text(event):
            while (j < len(items) and _is_text(items[j][1]) and items[j][1].message_id == event.message_id
                   and size + len(items[j][0]) <= MERGE_BYTES):
                size += len(items[j][0])
                j += 1
        if j - i > 1:
            out.append((_spliced(items, i, j), event))
        else:
            out.append((data, event))
        i = j
    return out


_DELTA = b',"delta":"'  # in the template, right before the delta's escaped text; ends with `"}\n\n`


def _spliced(items: list[tuple[bytes, BaseEvent | None]], start: int, end: int) -> bytes:
    """The template's bytes of items[start:end] (text events of one message) as one event: the first
    one's head (type, timestamp, message id), their escaped deltas joined. JSON escapes a string a
    character at a time, so the join of the escapes is the escape of the join."""
    first = items[start][0]
    head = first.find(_DELTA) + len(_DELTA)
    parts = [first[:head]]
    parts += [data[data.find(_DELTA) + len(_DELTA):-4] for data, _ in items[start:end]]
    parts.append(b'"}\n\n')
    return b"".join(parts)


def _is_text(event: BaseEvent | None) -> bool:
    return type(event) is TextMessageContentEvent and event.raw_event is None


def _close(merged: list[BaseEvent], parts: list[str]) -> None:
    if len(parts) > 1:
        first = merged[-1]
        merged[-1] = TextMessageContentEvent.model_construct(
            type=first.type, timestamp=first.timestamp, raw_event=None, message_id=first.message_id,
            delta="".join(parts))

