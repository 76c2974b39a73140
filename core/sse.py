"""The one shape of a Server-Sent Events answer, for the run streams and the gateway alike."""
from __future__ import annotations

from typing import AsyncIterator

from django.http import StreamingHttpResponse

from core import memory

# No caching, and no buffering by a proxy in front (nginx honours X-Accel-Buffering): every event
# must reach the client when it is written.
SSE_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}


class _SSEResponse(StreamingHttpResponse):
    """Closes its chunks' generator as soon as the server stops sending, also when a write fails.

    Django's ASGI handler closes only the iterator it asks the response for, not the generator
    behind it; after a failed write the exception's traceback keeps that generator alive until the
    garbage collector happens to find the cycle, and until then a run whose client is gone would
    go on streaming into nothing (its `finally` is what cancels it: runs/views.py `_write`).
    """

    async def __aiter__(self):
        chunks = self._iterator
        memory.stream_opened()
        try:
            async for part in chunks:
                yield self.make_bytes(part)
        finally:
            try:
                close = getattr(chunks, "aclose", None)
                if close is not None:
                    await close()
            finally:
                memory.stream_closed()  # the last one gives freed memory back (core/memory.py)


def sse_response(chunks: AsyncIterator[bytes]) -> StreamingHttpResponse:
    response = _SSEResponse(chunks, content_type="text/event-stream")
    for header, value in SSE_HEADERS.items():
        response[header] = value
    return response
