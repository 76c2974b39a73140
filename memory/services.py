"""Writing memories: save (deduplicated, within the user's MAX_PER_USER), forget, edit
(docs/memory.md). Synchronous; async callers go through core/db.py `db_call`.

Every function takes the project and the user and touches only that user's rows: there is no way to
name another user's memory through them (a memory id of another user is "not found").
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from memory.models import MAX_CHARS, MAX_PER_USER, Memory

# Two writers may pick the same free slot at once; the unique index refuses the second, which tries again.
ATTEMPTS = 4
_SPACE = re.compile(r"\s+")


class MemoryRefused(ValueError):
    """A memory the rules refuse (empty, too long, an unknown category or importance); the message says why."""


@dataclass(frozen=True)
class Saved:
    memory: Memory | None  # None: the user's memories are full of more important ones
    created: bool


def content_clean(content: str) -> str:
    """The text as stored: spacing collapsed; MemoryRefused when empty or longer than MAX_CHARS."""
    text = _SPACE.sub(" ", content or "").strip()
    if not text:
        raise MemoryRefused("A memory needs some text.")
    if len(text) > MAX_CHARS:
        raise MemoryRefused(f"A memory is at most {MAX_CHARS} characters; this one has {len(text)}.")
    return text


def content_hash(text: str) -> str:
    """The same memory however it is cased, spaced or ended ("I like tea." and "i like tea")."""
    folded = _SPACE.sub(" ", text.casefold()).strip().rstrip(".!;, ")
    return hashlib.sha256(folded.encode()).hexdigest()


def _checked(category: str, importance: int) -> None:
    if category not in Memory.Category.values:
        raise MemoryRefused(f"A memory's category is one of {', '.join(Memory.Category.values)}.")
    if not isinstance(importance, int) or not 1 <= importance <= 5:
        raise MemoryRefused("A memory's importance is 1 to 5.")


def live(*, project, user_key: str):
    return Memory.objects.filter(project=project, user_key=user_key, deleted_at__isnull=True)


def memory_save(*, project, user_key: str, content: str, category: str, importance: int = 3,
                source: str = Memory.Source.EXTRACTED, thread_id: str | None = None) -> Saved:
    """Stores one memory of the user; returns it (created False when the user had it already: then its
    importance is raised to the higher of the two and it counts as fresh). When the user has
    MAX_PER_USER live memories, the least important, oldest one is forgotten to make room, unless it
    is more important than this one (then nothing is stored: `Saved(None, False)`).

    One short transaction per attempt; raises MemoryRefused for a memory the rules refuse."""
    text = content_clean(content)
    _checked(category, importance)
    digest = content_hash(text)
    for attempt in range(ATTEMPTS):
        try:
            with transaction.atomic():
                return _save_once(project, user_key, text, digest, category, importance, source, thread_id)
        except IntegrityError:
            if attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _save_once(project, user_key: str, text: str, digest: str, category: str, importance: int, source: str,
               thread_id: str | None) -> Saved:
    rows = live(project=project, user_key=user_key)
    same = rows.filter(content_hash=digest).first()
    if same is not None:
        same.importance = max(same.importance, importance)
        same.save(update_fields=["importance", "updated_at"])
        return Saved(same, False)
    taken = dict(rows.values_list("slot", "id"))
    slot = next((n for n in range(MAX_PER_USER) if n not in taken), None)
    if slot is None:
        weakest = rows.order_by("importance", "updated_at", "id").first()
        if weakest.importance > importance:
            return Saved(None, False)
        # Forgotten first, in the same transaction: its slot is this memory's.
        rows.filter(pk=weakest.pk).update(deleted_at=timezone.now())
        slot = weakest.slot
    memory = Memory.objects.create(project=project, user_key=user_key, content=text, content_hash=digest, slot=slot,
                                   category=category, importance=importance, source=source, thread_id=thread_id)
    return Saved(memory, True)


def memory_forget(*, project, user_key: str, memory_id: str) -> bool:
    """Soft-deletes the user's live memory `memory_id`; False when the user has no such memory."""
    return bool(live(project=project, user_key=user_key).filter(pk=memory_id).update(deleted_at=timezone.now()))


def memory_edit_check(*, memory: Memory, content: str, category: str, importance: int) -> tuple[str, str]:
    """The text as it would be stored and its hash; MemoryRefused when the text, category or importance
    is refused, or the user has another live memory saying the same."""
    text = content_clean(content)
    _checked(category, importance)
    digest = content_hash(text)
    if memory.deleted_at is None and live(project=memory.project, user_key=memory.user_key).filter(
            content_hash=digest).exclude(pk=memory.pk).exists():
        raise MemoryRefused("The user has another memory saying the same.")
    return text, digest


def memory_edit(*, memory: Memory, content: str, category: str, importance: int) -> Memory:
    """Changes a memory's text, category and importance (the admin); raises as memory_edit_check."""
    text, digest = memory_edit_check(memory=memory, content=content, category=category, importance=importance)
    memory.content, memory.content_hash, memory.category, memory.importance = text, digest, category, importance
    memory.save()
    return memory


def memories_soft_delete(queryset) -> int:
    """Forgets (soft-deletes) the live memories of `queryset`; returns how many (the admin's action)."""
    return queryset.filter(deleted_at__isnull=True).update(deleted_at=timezone.now())


def memories_delete_user(*, project, user_key: str, batch: int) -> int:
    """Deletes every memory row of the user, live and forgotten, `batch` rows a statement (retention's
    forgetting of a user); returns how many."""
    removed = 0
    rows = Memory.objects.filter(project=project, user_key=user_key)
    while True:
        ids = list(rows.values_list("pk", flat=True)[:batch])
        if not ids:
            return removed
        removed += Memory.objects.filter(pk__in=ids)._raw_delete(rows.db)
