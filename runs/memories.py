"""A run's side of memory (docs/memory.md): the user's memories in the system prompt, within the
context budget; the memory tools in the toolbox; the extraction started once the run's end is stored.
Each is one call from the advance loop and costs nothing for a project that does not remember."""
from __future__ import annotations

from django.conf import settings

from core.db import db_call
from memory.extraction import memory_extract_later
from memory.prompt import memory_section
from memory.selectors import memory_list_for_prompt
from memory.tools import memory_tools
from projects.config import project_settings
from runs import context_budget
from runs.services import StartedRun
from runs.toolbox import Toolbox


async def memories_inject(started: StartedRun, messages: list[dict], label: str | None) -> None:
    """Adds the user's memories to the system prompt (`messages[0]`), most important and most recent
    first, in at most MEMORY_PROMPT_TOKENS, a quarter of the context budget and what the budget leaves
    beside the system prompt and the current turn (older turns are then trimmed by the budget as usual).
    One statement, and only when the project remembers its users."""
    thread = started.thread
    config = project_settings(thread.project)
    if not config.memory_enabled or not thread.user_key:
        return
    limit = settings.MEMORY_PROMPT_TOKENS
    if started.context_budget is not None:
        limit = min(limit, context_budget.spare(messages, started.context_budget, label,
                                                cap=started.context_budget // 4))
    if limit <= 0:
        return
    memories = await db_call(memory_list_for_prompt, project=thread.project, user_key=thread.user_key)
    section = memory_section(memories, max_tokens=limit, with_ids=config.memory_tools_enabled)
    if section:
        messages[0] = {**messages[0], "content": f"{messages[0]['content']}\n\n{section}"}


def memory_tools_add(started: StartedRun, toolbox: Toolbox) -> None:
    """Offers save_memory and forget_memory, bound to the run's user, when the project sets memoryToolsEnabled."""
    thread = started.thread
    if thread.user_key and project_settings(thread.project).memory_tools_enabled:
        toolbox.server_tools.update(memory_tools(project=thread.project, user_key=thread.user_key,
                                                 thread_id=thread.id))


def memories_extract_later(started: StartedRun) -> None:
    """Starts the background extraction of the run's turn (after its end was stored)."""
    memory_extract_later(project=started.thread.project, user_key=started.thread.user_key,
                         thread_id=started.thread.id)
