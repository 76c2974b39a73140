"""Reading memories: only ever one (project, user)'s."""
from __future__ import annotations

from memory.models import Memory


def memory_list_for_prompt(*, project, user_key: str) -> list[Memory]:
    """The user's live memories, most important first, then the most recently confirmed."""
    return list(Memory.objects.filter(project=project, user_key=user_key, deleted_at__isnull=True)
                .order_by("-importance", "-updated_at", "id")
                .only("id", "category", "importance", "content", "updated_at"))
