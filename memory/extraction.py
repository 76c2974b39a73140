"""Memories extracted in the background after a run completed (docs/memory.md#extraction).

Never on the run's path: the run loop hands `memory_extract_later` the thread once the run's end is
stored, and an extraction runs as a task of its own, `MEMORY_EXTRACTIONS` at a time per process. It
is one model call through the side calls' one door (telemetry/calls.py `model_complete`): admitted
against the project's limits, its tokens counted and its usage row (kind `memory`) written like any
call's. No transaction is open while the model answers: the turn is read before, the memories
stored after, each in a short one (memory/services.py).
"""
from __future__ import annotations

import asyncio
import json
import logging
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from core.db import db_call
from core.problems import Problem
from memory.models import MAX_CHARS, Memory
from memory.services import MemoryRefused, Saved, memory_save
from projects.config import project_settings
from providers.base import ModelRequest, ModelTask
from telemetry.calls import model_complete
from threads.content import transcript
from threads.models import Message

log = logging.getLogger(__name__)

PROMPT_CHARS = 6000
# The most memories one extraction stores: a reply that lists more is read up to here.
PER_EXTRACTION = 10
# Extractions waiting for a turn past this are dropped (and logged): memory is a nicety, not a queue.
MAX_WAITING = 100
SYSTEM_PROMPT = (
    "You keep notes about the user of a chat application, so that later conversations with them can be more "
    "helpful. Read the conversation you are given and note what is worth remembering about the user beyond it: "
    "their preferences, facts about them, their goals, the people in their life. Note only what the user said "
    "about themselves (never what the assistant said, nothing passing, nothing they would not expect to be "
    "kept), each as one short sentence about the user in the third person. Answer with a JSON object and "
    'nothing else, in this shape: {"memories": [{"content": "The user prefers answers in French.", '
    '"category": "preference", "importance": 3}]}, where category is one of preference, fact, goal, '
    "relationship and importance is 1 (trivia) to 5 (essential). Answer {\"memories\": []} when there is "
    "nothing to keep."
)


class DraftMemory(BaseModel):
    """One memory as the model writes it."""

    model_config = ConfigDict(extra="ignore")

    content: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_CHARS)]
    category: Literal["preference", "fact", "goal", "relationship"]
    importance: int = Field(default=3, ge=1, le=5)


def drafts_of(reply: str) -> list[DraftMemory]:
    """The valid memories of the model's reply (`{"memories": [...]}` or a bare list, perhaps fenced);
    an item that does not validate is left out, and a reply that is not JSON gives none."""
    text = reply.strip()
    if text.startswith("```") and text.endswith("```") and "\n" in text:
        text = text[text.index("\n") + 1:-3]
    try:
        parsed = json.loads(text)
    except ValueError:
        log.warning("A memory extraction's reply was not JSON")  # not logged: it may quote the user
        return []
    items = parsed.get("memories") if isinstance(parsed, dict) else parsed
    drafts = []
    for item in items if isinstance(items, list) else []:
        try:
            drafts.append(DraftMemory.model_validate(item))
        except ValidationError:
            continue
    return drafts[:PER_EXTRACTION]


def _turn(thread_id: str) -> list[Message]:
    """The thread's last turn: from its newest user message with text on (at most 20 messages)."""
    newest = list(Message.objects.filter(thread_id=thread_id).order_by("-created_at", "-id")[:20])
    for index, message in enumerate(newest):
        if message.role == Message.Role.USER and _typed(message):
            return list(reversed(newest[:index + 1]))
    return []


def _typed(message: Message) -> str:
    return "\n".join(b.get("text") or "" for b in message.content if b.get("type") == "text").strip()


async def memory_extract(*, project, user_key: str, thread_id: str) -> list[Saved]:
    """Extracts the memories of the thread's last turn and stores them (deduplicated); returns what
    was stored. A model that fails or is refused by the limits costs what it cost and stores nothing."""
    turn = await db_call(_turn, thread_id)
    texts = [text for m in turn if m.role == Message.Role.USER and (text := _typed(m))]
    if not texts:
        return []
    request = ModelRequest(
        messages=[{"role": "system", "content": SYSTEM_PROMPT},
                  {"role": "user", "content": "The conversation:\n\n"
                   + transcript(turn, max_chars=PROMPT_CHARS, keep_end=True)}],
        json_output=True,
        task=ModelTask("memories", {"userTexts": texts, "lastUserText": texts[-1]}),
    )
    try:
        reply = await model_complete(request, project=project, user_key=user_key, kind="memory", thread_id=thread_id)
    except Problem as problem:
        log.warning("A memory extraction failed: %s", problem.code)
        return []
    drafts = drafts_of(reply.text)
    return await db_call(_store, project=project, user_key=user_key, thread_id=thread_id, drafts=drafts) if drafts else []


def _store(*, project, user_key: str, thread_id: str, drafts: list[DraftMemory]) -> list[Saved]:
    saved = []
    for draft in drafts:
        try:
            saved.append(memory_save(project=project, user_key=user_key, content=draft.content,
                                     category=draft.category, importance=draft.importance,
                                     source=Memory.Source.EXTRACTED, thread_id=thread_id))
        except MemoryRefused:
            continue
    return saved


class Extractions:
    """The process's extractions in the background: at most MEMORY_EXTRACTIONS at once, MAX_WAITING more
    waiting. Each task is kept referenced until it ends, and `stop` (the process's shutdown) gives
    them a moment to finish, then cancels the rest."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task] = set()
        self._slots: asyncio.Semaphore | None = None
        self.dropped = 0

    def start(self, *, project, user_key: str, thread_id: str) -> asyncio.Task | None:
        from django.conf import settings

        if len(self._tasks) >= settings.MEMORY_EXTRACTIONS + MAX_WAITING:
            self.dropped += 1
            log.warning("Memory extraction of thread %s dropped: %d are waiting", thread_id, len(self._tasks))
            return None
        if self._slots is None:
            self._slots = asyncio.Semaphore(settings.MEMORY_EXTRACTIONS)
        task = asyncio.get_running_loop().create_task(self._run(project, user_key, thread_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _run(self, project, user_key: str, thread_id: str) -> None:
        async with self._slots:
            try:
                await memory_extract(project=project, user_key=user_key, thread_id=thread_id)
            except Exception:  # noqa: BLE001 - a background task has no caller to raise to
                log.exception("Memory extraction of thread %s failed", thread_id)

    async def stop(self, timeout: float = 5.0) -> None:
        tasks = list(self._tasks)
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=timeout)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        self._slots = None  # bound to this loop: a runtime started again on another makes its own


extractions = Extractions()


def memory_extract_later(*, project, user_key: str, thread_id: str) -> None:
    """Starts the extraction of the thread's last turn in the background when the project remembers
    its users (`memoryEnabled`) and the thread has a user. Returns at once; call it after the run's
    end is stored."""
    if user_key and project_settings(project).memory_enabled:
        extractions.start(project=project, user_key=user_key, thread_id=thread_id)
