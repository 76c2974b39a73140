"""A large tool-call argument folds into a non-streamed chat.completion in linear work (issue 27).

Counted, not timed: the characters string concatenation copies while the fragments arrive
(tests/support/work_count.py). `+=` on the growing arguments copied all of them per fragment.
"""
from __future__ import annotations

import json

from gateway.chunks import CompletionBuilder
from providers.base import StepEnd, ToolCallDelta
from tests.support.work_count import fragments


def test_a_243_kb_argument_is_folded_without_copying_it_per_fragment():
    text = json.dumps({"rows": [{"name": f"row {i}", "text": "lorem ipsum " * 12} for i in range(1500)]})
    assert len(text) > 240_000
    pieces, copies = fragments(text, 8)
    builder = CompletionBuilder(model="offline")
    for n, piece in enumerate(pieces):
        builder.feed(ToolCallDelta(index=0, id="call_1" if n == 0 else None, name="big" if n == 0 else None,
                                   arguments=piece))
    builder.feed(StepEnd(finish_reason="tool_calls"))

    call = builder.body()["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["arguments"] == text
    assert copies.characters <= 2 * len(text), copies.characters
