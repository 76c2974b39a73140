"""The memory tools a run offers when its project sets `memoryToolsEnabled` (docs/memory.md#tools).

Server tools (tools/registry.py `ServerTool`) bound to the run's project and user: unlike the
built-in tools they are made per run, so a call can only ever touch that user's memories, and they
are never in the registry an admin enables tools from. A refusal (a memory too long, an id the user
does not have) is a ValueError, which the toolbox gives the model as an `isError` result.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from core.db import db_call
from memory.models import MAX_CHARS, Memory
from memory.services import memory_forget, memory_save
from tools.registry import ServerTool

SAVE, FORGET = "save_memory", "forget_memory"


class SaveMemoryArgs(BaseModel):
    content: str = Field(min_length=1, max_length=MAX_CHARS,
                         description="What to remember about the user: one short sentence in the third person, "
                                     "e.g. 'The user prefers metric units.'")
    category: Literal["preference", "fact", "goal", "relationship"] = Field(
        "fact", description="preference, fact, goal or relationship")
    importance: int = Field(3, ge=1, le=5, description="How much it matters later: 1 (trivia) to 5 (essential)")


class ForgetMemoryArgs(BaseModel):
    memory_id: str = Field(min_length=1, max_length=40,
                           description="The id of the memory to forget, as shown in brackets (mem_…)")


def memory_tools(*, project, user_key: str, thread_id: str) -> dict[str, ServerTool]:
    """save_memory and forget_memory for one run of `user_key` on `project`."""

    async def save(args: SaveMemoryArgs) -> str:
        saved = await db_call(memory_save, project=project, user_key=user_key, content=args.content,
                              category=args.category, importance=args.importance, source=Memory.Source.TOOL,
                              thread_id=thread_id)
        if saved.memory is None:
            return "Not saved: the user's memories are full of more important ones."
        if not saved.created:
            return f"Already remembered, as {saved.memory.id}."
        return f"Saved, as {saved.memory.id}."

    async def forget(args: ForgetMemoryArgs) -> str:
        if not await db_call(memory_forget, project=project, user_key=user_key, memory_id=args.memory_id):
            raise ValueError(f"The user has no memory {args.memory_id}.")
        return f"Forgot {args.memory_id}."

    return {
        SAVE: ServerTool(SAVE, "Remember something about the user for later conversations.", SaveMemoryArgs, save),
        FORGET: ServerTool(FORGET, "Forget one of the user's memories, by its id.", ForgetMemoryArgs, forget),
    }
