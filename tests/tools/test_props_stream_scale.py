"""A large component's props stream in linear time with no long pause (docs/protocol.md#design-for-scale).

The test counts work instead of timing it (timings are `bin/bench props`): the Python function
calls that each `feed` makes, counted with `sys.setprofile`, for the same kind of document at two
sizes. Incremental parsing and diffing cost each fragment the same whatever came before it, so the
busiest fragment of a document ten times larger makes no more calls, and the calls in all grow ten
times. Re-parsing or re-diffing the whole document per fragment (what this replaced) makes both
grow with the document.
"""
from __future__ import annotations

import gc
import json
import sys

import jsonpatch

from bench.props import document
from tools.props_stream import PropsStream

FRAGMENT = 8


def _stream_counting_calls(text: str) -> tuple[dict, list[dict], list[int]]:
    """(final props, every operation sent, Python calls made by each feed and by finish).

    The cyclic garbage collector is off meanwhile: a collection can run inside any feed and call the
    finalizers of whatever the test process left behind, which would count as that feed's calls."""
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        if event == "call":
            calls += 1

    stream = PropsStream()
    sent: list[dict] = []
    per_feed: list[int] = []
    gc.disable()
    sys.setprofile(count)
    try:
        for i in range(0, len(text), FRAGMENT):
            calls = 0
            sent += stream.feed(text[i:i + FRAGMENT])
            per_feed.append(calls)
        calls = 0
        final, operations = stream.finish()
        per_feed.append(calls)
    finally:
        sys.setprofile(None)
        gc.enable()
    return final, sent + operations, per_feed


def test_a_200_kb_document_streams_with_constant_work_per_fragment():
    small_doc, large_doc = document(130), document(1300)
    small_text, large_text = json.dumps(small_doc), json.dumps(large_doc)
    assert len(large_text) > 200_000

    small_final, small_ops, small_calls = _stream_counting_calls(small_text)
    large_final, large_ops, large_calls = _stream_counting_calls(large_text)

    assert small_final == small_doc and large_final == large_doc
    assert jsonpatch.apply_patch({}, small_ops) == small_doc
    assert jsonpatch.apply_patch({}, large_ops) == large_doc
    # The busiest fragment: the same work at either size (a whole-document step would be ~10x).
    assert max(large_calls) <= max(small_calls) * 1.2, (max(small_calls), max(large_calls))
    # In all: linear, ten times the text for about ten times the calls (quadratic would be ~100x).
    ratio = sum(large_calls) / sum(small_calls)
    assert 8 < ratio < 12, ratio
