"""Encoding events: the TEXT_MESSAGE_CONTENT template writes exactly what ag_ui's model does, and
merging ready text deltas keeps the text byte for byte."""
from __future__ import annotations

import json

import pytest
from ag_ui.core import TextMessageContentEvent, TextMessageEndEvent, TextMessageStartEvent

from runs.stream.sse import encode_event, merge_encoded, merge_text, text_content

TRICKY = ['plain', 'a "quoted" word', "two\nlines\r\n", "tab\tand\bbell\x07", "emoji 😀🇫🇷", "\u2028",
          "a\u2029b", "back\\slash \\n", "\x00\x1f\x7f", "</script>", "é ñ 中文", "'single'", "/slash/"]


@pytest.mark.parametrize("delta", TRICKY)
def test_the_text_template_writes_what_ag_ui_writes(delta):
    event = TextMessageContentEvent(message_id="msg_ab-C_9", delta=delta, timestamp=1700000000123)
    expected = b"data: " + event.model_dump_json(by_alias=True, exclude_none=True).encode() + b"\n\n"
    assert encode_event(event) == expected


@pytest.mark.parametrize("delta", TRICKY)
def test_the_step_s_text_event_is_ag_ui_s_own(delta):
    # The step makes its text events without pydantic (runs/stream/sse.py text_content): the same model,
    # the same fields, and the same bytes through the template and through ag_ui's own encoding.
    validated = TextMessageContentEvent(message_id="msg_ab-C_9", delta=delta)
    made = text_content("msg_ab-C_9", delta)

    assert type(made) is TextMessageContentEvent and made == validated
    assert made.model_fields_set == validated.model_fields_set
    made.timestamp = validated.timestamp = 1700000000123
    assert encode_event(made) == encode_event(validated)
    assert made.model_dump_json(by_alias=True, exclude_none=True) == validated.model_dump_json(
        by_alias=True, exclude_none=True)


def test_merged_deltas_keep_the_text_byte_for_byte():
    deltas = [d for d in TRICKY for _ in range(3)]
    events = [TextMessageStartEvent(message_id="m1", role="assistant")]
    events += [TextMessageContentEvent(message_id="m1", delta=d) for d in deltas]
    events += [TextMessageEndEvent(message_id="m1")]

    merged = merge_text(events)

    assert [type(e) for e in merged] == [TextMessageStartEvent, TextMessageContentEvent, TextMessageEndEvent]
    frame = encode_event(merged[1])
    assert json.loads(frame[len(b"data: "):])["delta"] == "".join(deltas)


def test_only_consecutive_deltas_of_one_message_merge():
    a1, a2 = (TextMessageContentEvent(message_id="a", delta=t) for t in ("x", "y"))
    b1 = TextMessageContentEvent(message_id="b", delta="z")
    a3 = TextMessageContentEvent(message_id="a", delta="w")
    end = TextMessageEndEvent(message_id="a")

    merged = merge_text([a1, a2, b1, a3, end, a1])

    assert [(e.message_id, getattr(e, "delta", None)) for e in merged] == [
        ("a", "xy"), ("b", "z"), ("a", "w"), ("a", None), ("a", "x")]


def test_merged_encodings_are_the_bytes_of_the_merged_event():
    # The feed merges encoded deltas by splicing their bytes (runs/stream/sse.py merge_encoded): the
    # same bytes as merging the events and encoding the result, for every kind of escaped character.
    events = [TextMessageStartEvent(message_id="m1", role="assistant", timestamp=1)]
    events += [text_content("m1", d) for d in TRICKY for _ in range(2)]
    events += [TextMessageEndEvent(message_id="m1", timestamp=3)]
    for number, event in enumerate(events):
        event.timestamp = 1700000000000 + number
    items = [(encode_event(e), e) for e in events]

    merged = merge_encoded(items)

    assert [data for data, _ in merged] == [encode_event(e) for e in merge_text(events)]
    assert len(merged) == 3
