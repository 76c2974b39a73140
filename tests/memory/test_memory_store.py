"""The memories table keeps its rules itself (docs/memory.md#the-memories-table): 1,000 characters,
200 live memories per (project, user), one of each; saving deduplicates and makes room."""
from __future__ import annotations

import pytest
from django.db import DataError, IntegrityError, transaction
from django.utils import timezone

from memory.models import MAX_CHARS, MAX_PER_USER, Memory
from memory.prompt import memory_section
from memory.selectors import memory_list_for_prompt
from memory.services import MemoryRefused, content_hash, memory_forget, memory_save
from projects.models import Project

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]


def save(project, text: str, user_key: str = "alice", **extra):
    return memory_save(project=project, user_key=user_key, content=text, category=extra.pop("category", "fact"),
                       **extra)


def raw_row(project, *, content: str = "x", slot: int = 0, user_key: str = "alice", **extra) -> Memory:
    """A row written past the service, as a bug or another writer would."""
    return Memory.objects.create(project=project, user_key=user_key, category=extra.pop("category", "fact"),
                                 importance=extra.pop("importance", 3), content=content,
                                 content_hash=extra.pop("content_hash", content_hash(content)), slot=slot, **extra)


def test_the_database_refuses_a_text_over_1000_characters(project):
    raw_row(project, content="a" * MAX_CHARS)
    # PostgreSQL's varchar(1000) refuses it as data, SQLite's check constraint as integrity.
    with pytest.raises((DataError, IntegrityError)), transaction.atomic():
        raw_row(project, content="b" * (MAX_CHARS + 1), slot=1)


def test_the_database_refuses_an_empty_text_a_bad_importance_and_a_bad_category(project):
    for fields in ({"content": ""}, {"importance": 0}, {"importance": 6}, {"category": "secret"}):
        with pytest.raises(IntegrityError), transaction.atomic():
            raw_row(project, **fields)
    assert not Memory.objects.exists()


def test_the_database_holds_at_most_200_live_memories_per_user(project):
    Memory.objects.bulk_create([Memory(project=project, user_key="alice", category="fact", importance=3,
                                       content=f"fact {n}", content_hash=content_hash(f"fact {n}"), slot=n)
                                for n in range(MAX_PER_USER)])
    with pytest.raises(IntegrityError), transaction.atomic():
        raw_row(project, content="one more", slot=MAX_PER_USER)  # past the last slot
    with pytest.raises(IntegrityError), transaction.atomic():
        raw_row(project, content="one more", slot=7)  # a slot a live memory holds
    # A forgotten memory gives its slot back; another user has slots of their own.
    Memory.objects.filter(slot=7).update(deleted_at=timezone.now())
    raw_row(project, content="one more", slot=7)
    raw_row(project, content="bob's", slot=0, user_key="bob")
    assert Memory.objects.filter(user_key="alice", deleted_at__isnull=True).count() == MAX_PER_USER


def test_the_database_refuses_two_live_memories_saying_the_same(project):
    raw_row(project, content="Likes tea")
    with pytest.raises(IntegrityError), transaction.atomic():
        raw_row(project, content="likes tea.", content_hash=content_hash("likes tea."), slot=1)


def test_saving_the_same_memory_again_keeps_one_and_the_higher_importance(project):
    first = save(project, "The user likes  tea.", importance=2)
    again = save(project, "the user likes tea", importance=4)

    assert first.created and not again.created and again.memory.pk == first.memory.pk
    assert Memory.objects.get().importance == 4 and Memory.objects.get().content == "The user likes tea."


def test_a_text_over_1000_characters_or_empty_is_refused_before_the_database(project):
    with pytest.raises(MemoryRefused, match="1000"):
        save(project, "a" * (MAX_CHARS + 1))
    with pytest.raises(MemoryRefused):
        save(project, "   ")
    with pytest.raises(MemoryRefused):
        save(project, "ok", category="secret")
    assert not Memory.objects.exists()


def test_the_201st_memory_takes_the_place_of_the_least_important_oldest(project):
    Memory.objects.bulk_create([Memory(project=project, user_key="alice", category="fact",
                                       importance=1 if n == 42 else 3, content=f"fact {n}",
                                       content_hash=content_hash(f"fact {n}"), slot=n)
                                for n in range(MAX_PER_USER)])

    stronger = save(project, "more than the weakest", importance=2)
    assert stronger.created and stronger.memory.slot == 42
    assert Memory.objects.get(content="fact 42").deleted_at is not None
    tie = save(project, "as weak as the weakest", importance=2)  # a tie goes to the newer
    assert tie.created and tie.memory.slot == 42
    refused = save(project, "weaker than every one left", importance=1)
    assert refused.memory is None and not refused.created
    assert Memory.objects.filter(user_key="alice", deleted_at__isnull=True).count() == MAX_PER_USER


def test_forgetting_touches_only_that_users_memory(project):
    alice = save(project, "Alice's secret").memory
    other = Project.objects.create(name="other")

    assert not memory_forget(project=project, user_key="bob", memory_id=alice.pk)
    assert not memory_forget(project=other, user_key="alice", memory_id=alice.pk)
    assert memory_forget(project=project, user_key="alice", memory_id=alice.pk)
    assert memory_list_for_prompt(project=project, user_key="alice") == []


def test_the_prompt_lists_the_most_important_then_the_newest_within_its_tokens(project):
    save(project, "trivia", importance=1)
    save(project, "essential", importance=5)
    save(project, "x" * 400, importance=4)  # about 100 tokens: does not fit 60, the next still may
    save(project, "middling", importance=3)
    memories = memory_list_for_prompt(project=project, user_key="alice")

    section = memory_section(memories, max_tokens=60, with_ids=False)

    lines = section.splitlines()[1:]
    assert lines == ["- (fact) essential", "- (fact) middling", "- (fact) trivia"]
    assert memory_section(memories, max_tokens=10, with_ids=False) == ""
