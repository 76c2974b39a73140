"""Helpers for the memory tests: a project that remembers, and waiting for the background extractions."""
from __future__ import annotations

import time

from projects.config import ProjectSettings, project_settings_save


def remembering(project, *, tools: bool = False, **settings) -> None:
    project_settings_save(project, ProjectSettings(memory_enabled=True, memory_tools_enabled=tools, **settings))


def wait_extractions(project, count: int, *, user_key: str | None = None, timeout: float = 20.0) -> list:
    """The project's usage rows of memory extractions once there are `count` (each extraction leaves
    one, answered or failed): the extractions run after their runs ended, in the background."""
    from telemetry.models import Usage

    rows = Usage.objects.filter(project=project, kind=Usage.Kind.MEMORY)
    if user_key is not None:
        rows = rows.filter(user_key=user_key)
    deadline = time.monotonic() + timeout
    while rows.count() < count:
        assert time.monotonic() < deadline, f"{rows.count()} memory extractions ended, not {count}"
        time.sleep(0.05)
    return list(rows.order_by("id"))


def wait_memories(project, count: int, timeout: float = 20.0) -> list:
    """The project's memories (live and forgotten) once there are `count`: an extraction stores them
    after its usage row is written."""
    from memory.models import Memory

    rows = Memory.objects.filter(project=project)
    deadline = time.monotonic() + timeout
    while rows.count() < count:
        assert time.monotonic() < deadline, f"{rows.count()} memories stored, not {count}"
        time.sleep(0.05)
    return list(rows.order_by("created_at", "id"))
