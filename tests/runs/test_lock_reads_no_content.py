"""Taking the run lock reads no message content: on a thread holding a multi-MB screenshot, no
statement inside the lock's transaction selects the messages' content column; the history (which
the model needs, image and all) is read after the commit (runs/start_history.py,
docs/images-and-voice.md). Driven in-process (Django's AsyncClient) so every statement is seen."""
from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient

from tests.support.images import image_part, png
from tests.support.sse import decode_events
from tests.support.statements import counting_statements, selects_message_content

pytestmark = pytest.mark.both_dbs


def _run(api_key: str, path: str, body: dict) -> tuple[dict, list[dict]]:
    async def go():
        response = await AsyncClient().post(path, json.dumps(body), content_type="application/json",
                                            headers={"x-api-key": api_key})
        assert response.status_code == 200, response.content
        return dict(response.headers), b"".join([chunk async for chunk in response.streaming_content])

    headers, raw = async_to_sync(go)()
    return headers, list(decode_events([raw]))


def test_the_lock_s_transaction_reads_no_message_content_on_a_thread_holding_a_screenshot(
        transactional_db, api_key, offline):
    screenshot = png(800, 800, seed=3)  # about 1.9 MB, 2.6 MB as base64
    assert len(screenshot) > 1_500_000
    headers, events = _run(api_key, "/v1/threads/runs", {"userKey": "alice", "message": {
        "role": "user", "content": [{"type": "text", "text": "look"}, image_part(screenshot, "shot.png")]}})
    assert events[-1]["type"] == "RUN_FINISHED"
    with counting_statements() as log:
        _, events = _run(api_key, f"/v1/threads/{headers['X-Thread-Id']}/runs", {
            "userKey": "alice", "previousRunId": headers["X-Run-Id"],
            "message": {"role": "user", "content": [{"type": "text", "text": "and again?"}]}})
    assert events[-1]["type"] == "RUN_FINISHED"
    reads = [(sql, in_transaction) for sql, in_transaction in zip(log.statements, log.in_transaction)
             if selects_message_content(sql)]
    assert reads, str(log)  # the history was read ...
    assert not [sql for sql, in_transaction in reads if in_transaction], str(log)  # ... never inside the lock's
