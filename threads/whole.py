"""`GET /v1/threads/{id}`'s body, written as its messages are read (docs/images-and-voice.md).

The answer holds every message with its parts as sent, images included, so a thread of screenshots
is tens of megabytes. Read whole, the server would hold all of it (rows, wire models and the
encoded body) at once. Instead the messages are read in batches of at most MESSAGE_PAGE_BYTES of
content, each batch encoded and written before the next is read: the server holds one batch.
The status (200) is sent before the batches are read, so a database failure midway ends the body
unfinished; a client sees invalid JSON, never half a thread as if it were whole.
"""
from __future__ import annotations

from typing import AsyncIterator

import orjson
from django.conf import settings

from core.db import db_call
from threads import selectors
from threads.models import Thread
from threads.presenters import message_to_wire, thread_to_wire


async def thread_with_messages_chunks(thread: Thread) -> AsyncIterator[bytes]:
    """The JSON of the thread with its messages (wire.ThreadWithMessages), in pieces. Each read is
    one database call (core/db.py); no transaction is held across them, so a message written
    meanwhile is left out and one deleted meanwhile is skipped."""
    head = orjson.dumps({**thread_to_wire(thread).wire(), "messages": []})
    yield head[:-len(b"]}")]  # everything up to the opening of the messages array
    batches = await db_call(selectors.message_id_batches, thread=thread, max_bytes=settings.MESSAGE_PAGE_BYTES)
    separator = b""
    for ids in batches:
        messages = await db_call(selectors.message_batch, thread=thread, ids=ids)
        if messages:
            yield separator + b",".join(orjson.dumps(message_to_wire(m).wire()) for m in messages)
            separator = b","
    yield b"]}"
