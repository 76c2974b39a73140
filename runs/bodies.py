"""The run request bodies as this server accepts them.

`clientsdk/wire.py` says what the wire is, for the server and the client alike. The limits only this
server has are added here, on top of the wire models, so changing one needs no client release: the
lengths of the columns that store a value, and the most tokens a run may ask the model for. Every
entry point that reads a run body (`/v1` in runs/start.py, AG-UI in runs/agui/services.py) parses it
with these.
"""
from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field, StringConstraints

from clientsdk import wire
from runs.models import Run
from threads.models import Message

MAX_TOKENS = 1_000_000  # the most a run may ask the model to produce


def column_length(model: type, name: str) -> int:
    return model._meta.get_field(name).max_length


class InToolResultBlock(wire.InToolResultBlock):
    tool_use_id: Annotated[str, StringConstraints(min_length=1, max_length=column_length(Message, "tool_call_id"))]


InputBlock = Annotated[Union[wire.InTextBlock, wire.InResourceBlock, InToolResultBlock], Field(discriminator="type")]


class InputMessage(wire.InputMessage):
    content: Annotated[list[InputBlock], Field(min_length=1)]


class CreateRunBody(wire.CreateRunBody):
    message: InputMessage
    previous_run_id: Annotated[str, StringConstraints(max_length=column_length(Run, "id"))] | None = None
    model: Annotated[str, StringConstraints(max_length=column_length(Run, "model"))] | None = None
    max_tokens: Annotated[int, Field(ge=1, le=MAX_TOKENS)] | None = None


class CreateThreadWithRunBody(CreateRunBody, wire.CreateThreadWithRunBody):
    """The new thread's fields are the wire's; the run's limits are this server's (CreateRunBody first)."""
