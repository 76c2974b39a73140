"""A large tool-call argument streams through a step in linear work (issue 27).

The work is counted, not timed (timings would be `bin/bench`): the characters copied by string
concatenation while the fragments arrive (tests/support/work_count.py; `+=` on the growing
arguments copied all of them per fragment: 1,085 ms for 243 KB in 8-byte pieces), and the Python
calls the step makes, for the same argument at two sizes.
"""
from __future__ import annotations

import json

from clientsdk import wire
from providers.base import ToolCallDelta
from runs.step import Step
from runs.toolbox import Toolbox
from tests.support.work_count import counting_calls, fragments

FRAGMENT = 8


def _argument(rows: int) -> str:
    return json.dumps({"rows": [{"name": f"row {i}", "text": "lorem ipsum " * 12} for i in range(rows)]})


def _stream(text: str) -> tuple[Step, int, int]:
    """(the finished step, characters copied by concatenation, Python calls made)."""
    step = Step(message_id="msg_1", toolbox=Toolbox(client_tools={"big": wire.ClientTool(name="big")}))
    pieces, copies = fragments(text, FRAGMENT)
    with counting_calls() as calls:
        for n, piece in enumerate(pieces):
            delta = ToolCallDelta(index=0, id="call_1" if n == 0 else None, name="big" if n == 0 else None,
                                  arguments=piece)
            for _ in step.on_delta(delta):
                pass
        for _ in step.finish():
            pass
    return step, copies.characters, calls.calls


def test_a_243_kb_argument_costs_work_linear_in_its_size():
    small, large = _argument(150), _argument(1500)
    assert len(large) > 240_000

    small_step, small_copied, small_calls = _stream(small)
    large_step, large_copied, large_calls = _stream(large)

    assert small_step.calls[0].arguments == small and large_step.calls[0].arguments == large
    assert json.loads(large_step.model_message()["tool_calls"][0]["function"]["arguments"]) == json.loads(large)
    # Joined once: no fragment copies what came before it (`+=` copied 4.4e9 characters here).
    assert large_copied <= 2 * len(large), large_copied
    # Ten times the argument, about ten times the calls (quadratic work would be ~100x).
    ratio = large_calls / small_calls
    assert 8 < ratio < 12, ratio
