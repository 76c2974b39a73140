"""What a fast model's pieces may look like once read: runs of neighbours joined (providers/batching.py)."""
from __future__ import annotations

from itertools import accumulate
from typing import Sequence


def coarsens(parts: Sequence[str], pieces: Sequence[str]) -> bool:
    """Whether `parts` are `pieces` with runs of neighbours joined: the same text, and every boundary
    between two parts a boundary between two pieces (a read that held several gives one part)."""
    bounds = set(accumulate(len(piece) for piece in pieces))
    return "".join(parts) == "".join(pieces) and all(end in bounds for end in accumulate(len(p) for p in parts))
