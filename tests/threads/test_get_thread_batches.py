"""GET /v1/threads/{threadId} on a thread of screenshots: every image comes back exactly as sent, but
no statement reads more than MESSAGE_PAGE_BYTES of message content (one larger message alone), so
the server holds one batch of the thread at a time (threads/whole.py, docs/images-and-voice.md).
Driven in-process (Django's AsyncClient) so every statement and its parameters are seen."""
from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient

from tests.support.images import image_part, png
from tests.support.statements import counting_statements, selects_message_content
from threads import services

pytestmark = pytest.mark.both_dbs

PAGE_BYTES = 4_000_000


def _get(api_key: str, path: str):
    async def go():
        response = await AsyncClient().get(path, {"userKey": "alice"}, headers={"x-api-key": api_key})
        body = b"".join([chunk async for chunk in response.streaming_content]) if response.streaming \
            else response.content
        return response.status_code, response.headers.get("Content-Type"), body

    return async_to_sync(go)()


def test_a_thread_of_screenshots_is_read_in_batches_and_returned_whole(transactional_db, project, api_key,
                                                                          settings):
    settings.MESSAGE_PAGE_BYTES = PAGE_BYTES
    thread = services.thread_create(project=project, user_key="alice", metadata={"k": "v"})
    shots, sizes = {}, {}
    for n in range(3):
        shot = png(800, 800, seed=n)  # about 1.9 MB, 2.6 MB as base64: two do not fit in one batch
        part = image_part(shot, f"shot{n}.png")
        message = services.message_create(thread=thread, role="user", content=[{"type": "text", "text": f"{n}"}, part])
        reply = services.message_create(thread=thread, role="assistant", content=[{"type": "text", "text": "seen"}])
        shots[message.id], sizes[message.id], sizes[reply.id] = part, len(part["resource"]["blob"]), 20
    with counting_statements() as log:
        status, content_type, raw = _get(api_key, f"/v1/threads/{thread.id}")
    assert status == 200 and content_type == "application/json"
    body = json.loads(raw)
    assert body["id"] == thread.id and body["metadata"] == {"k": "v"}
    assert len(body["messages"]) == 6 and [m["role"] for m in body["messages"]] == ["user", "assistant"] * 3
    for message in body["messages"]:
        if message["id"] in shots:
            assert message["content"][1] == shots[message["id"]]  # the blob exactly as sent
    reads = [params for sql, params in zip(log.statements, log.params) if selects_message_content(sql)]
    assert len(reads) >= 3, str(log)
    for params in reads:
        named = [p for p in params if p in sizes]
        assert named and (len(named) == 1 or sum(sizes[p] for p in named) <= PAGE_BYTES), (named, str(log))
        assert sum(1 for p in named if p in shots) <= 1
