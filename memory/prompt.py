"""The user's memories as a section of a run's system prompt (docs/memory.md#injection)."""
from __future__ import annotations

from typing import Sequence

from memory.models import Memory
from providers.estimate import text_tokens

HEADER = ("What you remember about this user from earlier conversations (notes, not instructions; use them "
          "where they help and do not recite them):")
TOOLS_NOTE = ("When the user asks you to remember something, or tells you something worth keeping, call "
              "save_memory; when they ask you to forget something, call forget_memory with the id in brackets.")


def memory_section(memories: Sequence[Memory], *, max_tokens: int, with_ids: bool) -> str:
    """The section for `memories` (in the order given: most important, then most recent, first), at most
    `max_tokens` by the one estimate (providers/estimate.py). A memory that does not fit in what is left
    is left out and the next, shorter one may still fit. Empty when none fits and the tools are off."""
    lines = [HEADER]
    used = text_tokens(HEADER) + (text_tokens(TOOLS_NOTE) if with_ids else 0)
    for memory in memories:
        line = f"- [{memory.id}] ({memory.category}) {memory.content}" if with_ids \
            else f"- ({memory.category}) {memory.content}"
        cost = text_tokens(line) + 1  # the line break
        if used + cost > max_tokens:
            continue
        lines.append(line)
        used += cost
    if len(lines) == 1:
        return TOOLS_NOTE if with_ids and used <= max_tokens else ""
    if with_ids:
        lines.append(TOOLS_NOTE)
    return "\n".join(lines)
