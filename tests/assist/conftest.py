"""Helpers for thread names and suggestions: conversations arranged through the thread service."""
from __future__ import annotations

import pytest

from clientsdk import wire
from threads import services
from threads.models import Message, Thread

DATA_CARD = {"name": "DataCard", "description": "A card with one figure and its label.",
             "propsSchema": {"type": "object", "properties": {"label": {"type": "string"}}}}
BAR_CHART = {"name": "BarChart", "description": "A bar chart of a few series.",
             "propsSchema": {"type": "object", "properties": {"series": {"type": "array"}}}}


def conversation(project, *turns: tuple[str, str], user_key: str = "alice") -> tuple[Thread, list[Message]]:
    """A thread holding `turns` ((role, text), …) as its messages, oldest first."""
    initial = [wire.InitialMessage(role=role, content=[wire.InTextBlock(type="text", text=text)])
               for role, text in turns]
    thread = services.thread_create(project=project, user_key=user_key, initial_messages=initial)
    return thread, list(thread.messages.order_by("created_at", "id"))


@pytest.fixture
def chat(project) -> tuple[Thread, Message]:
    """A thread with one user question and the assistant's answer: (thread, assistant message)."""
    thread, messages = conversation(project, ("user", "Which city has the most bridges?"),
                                    ("assistant", "Hamburg has more bridges than Venice and Amsterdam."))
    return thread, messages[1]
