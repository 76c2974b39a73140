"""The thread request bodies as this server accepts them: the wire's models (clientsdk/wire.py) with
the limits only this server has (the columns' lengths), so changing one needs no client release."""
from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

from clientsdk import wire
from threads.models import Thread


class UpdateThreadBody(wire.UpdateThreadBody):
    name: Annotated[str, StringConstraints(max_length=Thread._meta.get_field("name").max_length)] | None = None
