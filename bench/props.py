"""`bin/bench props`: CPU time to stream a large component's props as JSON Patch (docs/protocol.md#design-for-scale).

Feeds a JSON document of about 200 KB to `PropsStream` in 8-character fragments, as a model's
tool-call arguments arrive, and prints the CPU time in all and for the slowest fragment (the
longest pause the event loop would see), and the final strict parse and comparison, which reads the
whole text once. The test suite checks the same property by counting work
(tests/tools/test_props_stream_scale.py); the times belong here.
"""
from __future__ import annotations

import gc
import json
import statistics
import time

from tools.props_stream import PropsStream


def document(rows: int) -> dict:
    return {"title": "t" * 1000, "rows": [
        {"name": f"row {i}", "value": i, "ratio": i / 7, "tags": ["a", "b"], "text": "lorem ipsum \\n \u00e9 " * 4}
        for i in range(rows)]}


def stream_once(text: str, fragment: int) -> tuple[float, float, float]:
    """(CPU seconds in all, of the slowest feed, of finish)."""
    stream = PropsStream()
    worst = 0.0
    gc.disable()  # the cyclic collector's pauses measure the process's heap, not this code
    try:
        began = time.process_time()
        for i in range(0, len(text), fragment):
            before = time.process_time()
            stream.feed(text[i:i + fragment])
            worst = max(worst, time.process_time() - before)
        before = time.process_time()
        stream.finish()
        end = time.process_time()
        return end - began, worst, end - before
    finally:
        gc.enable()


def props(repeat: int) -> None:
    print("| document | fragments | CPU in all | slowest fragment | finish |")
    print("|---|---|---|---|---|")
    for rows in (130, 1300):
        text = json.dumps(document(rows))
        runs = [stream_once(text, 8) for _ in range(repeat)]
        total = statistics.median(r[0] for r in runs)
        worst = statistics.median(r[1] for r in runs)
        finish = statistics.median(r[2] for r in runs)
        print(f"| {len(text) / 1000:.0f} KB | {len(text) // 8:,} | {total * 1000:.0f} ms | {worst * 1000:.2f} ms"
              f" | {finish * 1000:.2f} ms |")
    print(f"(medians of {repeat} runs, CPU time)")
