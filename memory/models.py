"""The `memories` table: what a project remembers about one end user (docs/memory.md).

The database itself holds the rules, on PostgreSQL and SQLite alike: a memory's text is 1 to
MAX_CHARS characters, its importance 1 to 5, its category one of four; a user has at most
MAX_PER_USER live memories (each live memory holds one of the user's numbered `slot`s, unique among
the live ones and below MAX_PER_USER), and no two live memories of a user say the same thing
(`content_hash`, of the text with its case and spacing folded). A forgotten memory is kept with
`deleted_at` set (the admin can see what was forgotten) until its user is forgotten
(retention/forget.py), which deletes every row of theirs.
"""
from __future__ import annotations

from django.db import models
from django.db.models.functions import Length
from django.db.models.lookups import GreaterThanOrEqual, LessThanOrEqual

from core.ids import new_id
from projects.identities import STORED_MAX_LENGTH

MAX_CHARS = 1000
MAX_PER_USER = 200


def _memory_id() -> str:
    return new_id("mem")


class Memory(models.Model):
    class Category(models.TextChoices):
        PREFERENCE = "preference"
        FACT = "fact"
        GOAL = "goal"
        RELATIONSHIP = "relationship"

    class Source(models.TextChoices):
        EXTRACTED = "extracted"  # by the model, after a run (memory/extraction.py)
        TOOL = "tool"  # the model's save_memory call during a run (memory/tools.py)
        ADMIN = "admin"

    id = models.CharField(primary_key=True, max_length=40, default=_memory_id, editable=False)
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="memories")
    # The user as threads store them (projects/identities.py): a userKey, token:<sub> or login:<id>.
    user_key = models.CharField(max_length=STORED_MAX_LENGTH)
    category = models.CharField(max_length=16, choices=Category.choices)
    importance = models.PositiveSmallIntegerField(default=3)
    content = models.CharField(max_length=MAX_CHARS)
    content_hash = models.CharField(max_length=64, editable=False)
    slot = models.PositiveSmallIntegerField(editable=False)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.EXTRACTED)
    thread_id = models.CharField(max_length=40, null=True, blank=True)  # where it was learnt, if anywhere
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "memories"
        verbose_name_plural = "memories"
        constraints = [
            models.CheckConstraint(condition=GreaterThanOrEqual(Length("content"), 1)
                                   & LessThanOrEqual(Length("content"), MAX_CHARS), name="memory_content_length"),
            models.CheckConstraint(condition=models.Q(importance__gte=1, importance__lte=5),
                                   name="memory_importance_range"),
            models.CheckConstraint(condition=models.Q(category__in=["preference", "fact", "goal", "relationship"]),
                                   name="memory_category_known"),
            models.CheckConstraint(condition=models.Q(slot__lt=MAX_PER_USER), name="memory_slot_range"),
            # At most MAX_PER_USER live memories per user: each holds one of that many slots.
            models.UniqueConstraint(fields=["project", "user_key", "slot"], condition=models.Q(deleted_at__isnull=True),
                                    name="memory_live_slot_uniq"),
            models.UniqueConstraint(fields=["project", "user_key", "content_hash"],
                                    condition=models.Q(deleted_at__isnull=True), name="memory_live_content_uniq"),
        ]
        indexes = [
            # Forgetting a user (live and forgotten rows alike), and the admin's list of one user's.
            models.Index(fields=["project", "user_key", "-updated_at"], name="memory_user_idx"),
        ]

    def __str__(self) -> str:
        return self.content[:80]

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None
