"""The one shape of a Server-Sent Events answer, for the run streams and the gateway alike."""
from __future__ import annotations

from typing import AsyncIterator

from django.http import StreamingHttpResponse

# No caching, and no buffering by a proxy in front (nginx honours X-Accel-Buffering): every event
# must reach the client when it is written.
SSE_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}


def sse_response(chunks: AsyncIterator[bytes]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type="text/event-stream")
    for header, value in SSE_HEADERS.items():
        response[header] = value
    return response
