"""The raw SSE reading of the openai provider: payloads from any split of the body."""
from __future__ import annotations

import asyncio

import pytest

from providers.openai_provider import sse_payloads

BODY = (b': keep-alive\n\ndata: {"a": 1}\n\nevent: x\ndata: {"b":\ndata: 2}\n\r\n'
        b'data:{"c": "3\\n"}\r\n\r\ndata: [DONE]\n\n')
PAYLOADS = [b'{"a": 1}', b'{"b":\n2}', b'{"c": "3\\n"}', b"[DONE]"]


async def _payloads(blocks):
    async def body():
        for block in blocks:
            yield block

    return [p async for p in sse_payloads(body())]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_payloads_come_out_whole_whatever_the_split(size):
    blocks = [BODY[i:i + size] for i in range(0, len(BODY), size)]
    assert asyncio.run(_payloads(blocks)) == PAYLOADS


def test_a_last_event_without_its_blank_line_still_counts():
    assert asyncio.run(_payloads([b'data: {"x": 1}'])) == [b'{"x": 1}']
