"""Reads. Every read is scoped by (project, user key): another user's thread does not exist."""
from __future__ import annotations

from core.problems import Problem
from projects.models import Project
from threads.cursors import keyset_page
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
    return keyset_page(thread.messages.all(), cursor=cursor, limit=limit, descending=order == "desc")


def message_list_all(*, thread: Thread) -> list[Message]:
    return list(thread.messages.order_by("created_at", "id"))


def message_get(*, thread: Thread, message_id: str) -> Message:
    message = thread.messages.filter(id=message_id).first()
    if message is None:
        raise Problem(404, "MESSAGE_NOT_FOUND", f"Message {message_id} was not found.")
    return message
