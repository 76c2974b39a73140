"""Which `initialMessages` a thread may start with (docs/abuse-and-limits.md).

As on the reference server: user, assistant and system roles; at most one system message, first, and
only when the project sets `allowSystemPromptOverride` (it then replaces the project's instructions for
that thread, runs/history.py). Otherwise anyone holding the public key could append instructions after
the operator's prompt.
"""
from __future__ import annotations

from typing import Sequence

from clientsdk import wire
from core.problems import validation_error
from projects.config import project_settings


def initial_messages_check(*, project, messages: Sequence[wire.InitialMessage], field: str) -> None:
    """Raises a 400 VALIDATION_ERROR naming the offending message (`{field}[i].role`)."""
    systems = [i for i, message in enumerate(messages) if message.role == "system"]
    if not systems:
        return
    where = f"{field}[{systems[0]}].role"
    if not project_settings(project).allow_system_prompt_override:
        raise validation_error("This project does not allow a system message in initialMessages "
                               "(allowSystemPromptOverride is off).", field=where)
    if len(systems) > 1:
        raise validation_error("Only one system message is allowed in initialMessages.",
                               field=f"{field}[{systems[1]}].role")
    if systems[0] != 0:
        raise validation_error("A system message must be the first of initialMessages.", field=where)
