"""A fast model's deltas per batch: what one read of its stream held, merged into as few deltas as say the same.

A vendor provider reads its HTTP body a block at a time (providers/aiohttp_transport.py hands over
everything that has arrived). When the model streams faster than the run sends (a fast model, a busy
server), one block holds many events, and handing them on one by one cost every layer above (the
call's door, the chain, the run's step, its encoding, its feed, the event log, the response's send)
its work once per delta (docs/performance.md, "Per batch (issue 40)"). `merged` folds the deltas of
one block into the fewest that carry the same output: each run of consecutive text deltas into one,
of reasoning deltas of one block into one, of one tool call's argument fragments into one (each up
to MERGE_CHARS). Joined text and arguments are exactly the fragments' concatenation, so what the
step stores and shows in the end is the same; a slow model (one event per read) gives the same
deltas it always did.

Tool-call arguments may be a component's props (tools/props_stream.py): PropsStream's patches bring
the client from the props seen to the props the text so far determines, for any split of that text,
so a longer fragment only means fewer, larger patches with the same result.
This module does not import Django.
"""
from __future__ import annotations

from providers.base import Delta, ReasoningDelta, TextDelta, ToolCallDelta


# A merged delta's text or arguments stay under this many characters: its event, escaped for JSON at
# 6 bytes a character at worst, stays under the 32 KB a reader's merged text event is held to
# (runs/stream/sse.py MERGE_BYTES), however much of a stream one read holds. A single delta that is
# larger on its own is passed on as it came.
MERGE_CHARS = 4096


def merged(deltas: list[Delta]) -> list[Delta]:
    """`deltas` (in order) with each run of consecutive deltas that continue one another folded into
    one, up to MERGE_CHARS: text after text; reasoning after reasoning of the same block; a tool call's
    argument fragment (no id, no name) after a delta of the same call, which keeps its id and name.
    Anything else (a whole reasoning block, the step's end) stays where it was and ends a run."""
    if len(deltas) < 2:
        return deltas
    out: list[Delta] = []
    parts: list[str] = []  # the pieces of out[-1]'s text or arguments, joined once when its run ends
    size = 0
    for delta in deltas:
        kind = type(delta)
        piece = delta.arguments if kind is ToolCallDelta else getattr(delta, "text", "")
        # Text after text, the common case, without a call per delta.
        if parts and size + len(piece) <= MERGE_CHARS and (
                (kind is TextDelta and type(out[-1]) is TextDelta) or _continues(out[-1], delta)):
            parts.append(piece)
            size += len(piece)
            continue
        _close(out, parts)
        out.append(delta)
        parts = [piece] if kind is TextDelta or kind is ReasoningDelta or kind is ToolCallDelta else []
        size = len(piece)
    _close(out, parts)
    return out


def _continues(last: Delta, delta: Delta) -> bool:
    kind = type(delta)
    if kind is not type(last):
        return False
    if kind is TextDelta:
        return True
    if kind is ReasoningDelta:
        return delta.block == last.block
    if kind is ToolCallDelta:
        return delta.index == last.index and delta.id is None and delta.name is None
    return False


def _close(out: list[Delta], parts: list[str]) -> None:
    """Gives out[-1] the joined text or arguments of its run, when the run had more than one delta."""
    if len(parts) < 2:
        return
    last, joined = out[-1], "".join(parts)
    if type(last) is TextDelta:
        out[-1] = TextDelta(joined)
    elif type(last) is ReasoningDelta:
        out[-1] = ReasoningDelta(joined, block=last.block)
    else:
        out[-1] = ToolCallDelta(index=last.index, id=last.id, name=last.name, arguments=joined)


def texts_merged(texts: list[str]) -> list[TextDelta]:
    """Consecutive text pieces as the fewest text deltas, each up to MERGE_CHARS (a piece larger on its
    own stays whole): what `merged` gives for their text deltas, without a delta made per piece."""
    out: list[TextDelta] = []
    start, size = 0, 0
    for i, text in enumerate(texts):
        if i > start and size + len(text) > MERGE_CHARS:
            out.append(TextDelta("".join(texts[start:i])))
            start, size = i, 0
        size += len(text)
    if start < len(texts):
        out.append(TextDelta("".join(texts[start:])))
    return out
