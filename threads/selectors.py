"""Reads. Every read is scoped by (project, user key): another user's thread does not exist."""
from __future__ import annotations

from django.conf import settings
from django.db.models import TextField
from django.db.models.functions import Cast, Length

from core.problems import Problem
from projects.models import Project
from threads import statements
from threads.cursors import encode_cursor, keyset_page
from threads.models import Message, Thread

THREAD_NOT_FOUND = "THREAD_NOT_FOUND"


def thread_get(*, project: Project, user_key: str | None, thread_id: str) -> Thread:
    """The user's thread; `user_key` None (only the user-less routes of @tambo-ai/client, see
    Principal.user_key_optional) finds it by project and id alone."""
    scope = {"user_key": user_key} if user_key is not None else {}
    thread = Thread.objects.filter(id=thread_id, project=project, **scope).first()
    if thread is None:
        raise Problem(404, THREAD_NOT_FOUND, f"Thread {thread_id} was not found.")
    return thread


def thread_list(*, project: Project, user_key: str, limit: int, cursor: str | None):
    qs = Thread.objects.filter(project=project, user_key=user_key)
    return keyset_page(qs, cursor=cursor, limit=limit, descending=True)


def message_list(*, thread: Thread, limit: int, cursor: str | None, order: str):
    """One page of the thread's messages, cut short (with `has_more`) where their content would pass
    MESSAGE_PAGE_BYTES, so a page of screenshots stays bounded in memory (docs/images-and-voice.md).
    Two statements: the page's ids and content sizes first, then the content of those that fit."""
    sized = thread.messages.annotate(size=Length(Cast("content", TextField()))).only("id", "created_at")
    rows, next_cursor, has_more = keyset_page(sized, cursor=cursor, limit=limit, descending=order == "desc")
    total, fitting = 0, []
    for row in rows:
        total += row.size or 0
        if fitting and total > settings.MESSAGE_PAGE_BYTES:
            break
        fitting.append(row)
    if len(fitting) < len(rows):
        has_more, next_cursor = True, encode_cursor(fitting[-1].created_at, fitting[-1].id)
    full = {m.id: m for m in thread.messages.filter(id__in=[row.id for row in fitting])}
    return [full[row.id] for row in fitting if row.id in full], next_cursor, has_more


def message_id_batches(*, thread: Thread, max_bytes: int) -> list[list[str]]:
    """The ids of the thread's messages, oldest first, in batches whose stored content stays within
    `max_bytes` (a larger message is a batch alone). One statement, which reads sizes, not content."""
    rows = thread.messages.annotate(size=Length(Cast("content", TextField()))).order_by(
        "created_at", "id").values_list("id", "size")
    batches: list[list[str]] = []
    current: list[str] = []
    total = 0
    for message_id, size in rows:
        if current and total + (size or 0) > max_bytes:
            batches.append(current)
            current, total = [], 0
        current.append(message_id)
        total += size or 0
    if current:
        batches.append(current)
    return batches


def message_batch(*, thread: Thread, ids: list[str]) -> list[Message]:
    """The thread's messages of `ids`, in that order (one deleted meanwhile is left out)."""
    found = {m.id: m for m in thread.messages.filter(id__in=ids)}
    return [found[i] for i in ids if i in found]


def message_list_all(*, thread: Thread) -> list[Message]:
    # Every run reads its history: a statement written once (threads/statements.py), not a queryset.
    return statements.messages_oldest_first(thread)


def message_list_newest(*, thread: Thread, max_chars: int, batch: int = 100) -> tuple[list[Message], bool]:
    """The thread's latest messages, oldest first, read newest-first in batches until their stored
    content passes `max_chars` (the batch that passes it is kept whole), and whether they reach back
    to the thread's first message: a long thread under a context budget is not loaded whole to be
    cut afterwards. The caller trims to turn boundaries."""
    newest: list[Message] = []
    size = 0
    whole = False
    last = None
    while size <= max_chars:
        rows = statements.messages_newest_first(thread, limit=batch, before=last)
        newest.extend(rows)
        size += sum(len(str(m.content)) + len(str(m.additional_context or "")) for m in rows)
        if len(rows) < batch:
            whole = True
            break
        last = rows[-1]
    newest.reverse()
    return newest, whole


def message_get(*, thread: Thread, message_id: str) -> Message:
    message = thread.messages.filter(id=message_id).first()
    if message is None:
        raise Problem(404, "MESSAGE_NOT_FOUND", f"Message {message_id} was not found.")
    return message
