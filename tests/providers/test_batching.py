"""A read's deltas merged (providers/batching.py): the same output in fewer deltas, never across a
boundary that means something."""
from __future__ import annotations

from providers.base import ReasoningBlock, ReasoningDelta, StepEnd, TextDelta, ToolCallDelta
from providers.batching import MERGE_CHARS, merged, texts_merged
from providers.openai_provider import _StepFold


def test_text_after_text_is_one_delta_with_the_text_joined():
    assert merged([TextDelta("Hel"), TextDelta("lo "), TextDelta("wörld 👋")]) == [TextDelta("Hello wörld 👋")]


def test_a_single_delta_or_none_is_passed_on_as_it_came():
    one = [TextDelta("Hi")]
    assert merged(one) is one
    assert merged([]) == []


def test_one_calls_fragments_join_under_its_first_delta_and_a_new_call_starts_a_new_one():
    deltas = [ToolCallDelta(0, "call_a", "get_weather", ""), ToolCallDelta(0, None, None, '{"ci'),
              ToolCallDelta(0, None, None, 'ty": "Oslo"}'), ToolCallDelta(1, "call_b", "get_time", '{"tz'),
              ToolCallDelta(1, None, None, '": "CET"}')]
    assert merged(deltas) == [ToolCallDelta(0, "call_a", "get_weather", '{"city": "Oslo"}'),
                              ToolCallDelta(1, "call_b", "get_time", '{"tz": "CET"}')]


def test_interleaved_calls_stay_apart():
    deltas = [ToolCallDelta(0, "a", "f", "{"), ToolCallDelta(1, "b", "g", "{"), ToolCallDelta(0, None, None, "}"),
              ToolCallDelta(1, None, None, "}")]
    assert merged(deltas) == deltas


def test_reasoning_joins_within_its_block_and_kinds_never_mix():
    deltas = [ReasoningDelta("Let ", 0), ReasoningDelta("me see.", 0), ReasoningDelta("Again", 1),
              ReasoningBlock({"type": "redacted_thinking", "data": "x"}), TextDelta("A"), TextDelta("B"),
              ToolCallDelta(0, "c", "f", "{}"), TextDelta("C"), StepEnd("stop")]
    assert merged(deltas) == [ReasoningDelta("Let me see.", 0), ReasoningDelta("Again", 1),
                              ReasoningBlock({"type": "redacted_thinking", "data": "x"}), TextDelta("AB"),
                              ToolCallDelta(0, "c", "f", "{}"), TextDelta("C"), StepEnd("stop")]


def test_a_merged_delta_stays_within_merge_chars_and_loses_nothing():
    pieces = [f"piece {i} " for i in range(2000)]
    out = merged([TextDelta(p) for p in pieces])
    assert "".join(d.text for d in out) == "".join(pieces)
    assert 1 < len(out) < len(pieces) // 100
    assert all(len(d.text) <= MERGE_CHARS for d in out)
    # A single delta larger than the bound is passed on whole.
    big = "x" * (MERGE_CHARS + 10)
    assert merged([TextDelta("a"), TextDelta(big), TextDelta("b")]) == [TextDelta("a"), TextDelta(big), TextDelta("b")]


def test_text_pieces_join_like_their_deltas_would():
    pieces = [f"piece {i} " for i in range(2000)] + ["y" * (MERGE_CHARS + 1), "z"]
    assert texts_merged(pieces) == merged([TextDelta(p) for p in pieces])
    assert texts_merged(["a"]) == [TextDelta("a")] and texts_merged([]) == []


def test_a_read_of_chunks_folds_as_each_chunk_alone_would_merged():
    def chunk(delta, **extra):
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": extra.pop("finish", None)}], **extra}
    chunks = [chunk({"role": "assistant", "content": ""}), chunk({"content": "Hel"}),
              chunk({"content": "lo", "refusal": None}),
              chunk({"reasoning_content": "hm"}), chunk({"content": " there"}),
              chunk({"content": "!",
                     "tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{"}}]}),
              chunk({"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]}), chunk({"content": "ok"}),
              chunk({}, finish="tool_calls"), {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2,
                                                                         "total_tokens": 3}}]
    one, alone = _StepFold(), _StepFold()
    expected: list = []
    for c in chunks:
        expected += alone.feed(c)
    assert one.feed_read(chunks) == merged(expected)
    assert (one.finish_reason, one.usage) == (alone.finish_reason, alone.usage)
    assert one.end() == alone.end()
