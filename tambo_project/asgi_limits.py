"""The server's request-body size limits, at the ASGI edge.

Django checks its upload limit only against Content-Length, and its ASGI handler reads a chunked
body whole before any view runs. This wrapper counts the bytes as they arrive and answers 413 as
soon as the route's limit is passed, with or without Content-Length, so no request can make the
server buffer an unbounded body. The limit is MAX_REQUEST_BYTES, except on the two v1 routes that
start a run, whose bodies carry the user's images and files (MAX_RUN_BYTES, 10 MB like Tambo's), and on
the voice upload (MAX_AUDIO_BYTES plus room for the multipart framing; the view counts the file itself). Nothing behind it checks the size again (Django's own check is off:
settings.py `DATA_UPLOAD_MAX_MEMORY_SIZE`), so every 413 for a body comes from here, in the shape
of its route (core/error_shapes.py).

The body also has a deadline: all of it within REQUEST_BODY_TIMEOUT seconds of the request's start,
else 408 and the connection is closed (a client that sends headers and then not its body held a
connection, and the request, for ever). The deadline covers the body only: a streaming answer's
later wait for the client to go away is not cut.
"""
from __future__ import annotations

import asyncio
import re

from django.conf import settings
from django.http import HttpResponse

from core.error_shapes import error_answer
from core.problems import Problem


# POST /v1/threads/runs and POST /v1/threads/{threadId}/runs (the DELETE below them has no body).
RUN_ROUTE = re.compile(r"^/v1/threads/(?:runs|[^/]+/runs)/?$")
AUDIO_ROUTE = "/audio/transcribe"
# The multipart framing around the audio file (boundaries, part headers, a `model` or `language` field).
AUDIO_FRAMING_BYTES = 64 * 1024


def body_limit(path: str) -> int:
    """The most bytes a request body to `path` may have."""
    if RUN_ROUTE.match(path):
        return settings.MAX_RUN_BYTES
    if path.rstrip("/") == AUDIO_ROUTE:
        return settings.MAX_AUDIO_BYTES + AUDIO_FRAMING_BYTES
    return settings.MAX_REQUEST_BYTES


def too_large(path: str) -> HttpResponse:
    """The 413 in the shape callers of `path` read (core/error_shapes.py)."""
    detail = f"The request body is larger than {body_limit(path)} bytes."
    return error_answer(Problem(413, "PAYLOAD_TOO_LARGE", detail), path)


def too_slow(path: str) -> HttpResponse:
    """The 408 for a body that did not arrive in time, in the shape of `path`'s callers."""
    detail = f"The request body did not arrive within {settings.REQUEST_BODY_TIMEOUT:g} seconds."
    return error_answer(Problem(408, "REQUEST_TIMEOUT", detail), path)


class BodySizeLimit:
    def __init__(self, app, limit=body_limit):
        self.app = app
        self.limit = limit  # path -> bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        answered = False
        limit = self.limit(scope.get("path", ""))

        async def refuse(answer=too_large) -> None:
            nonlocal answered
            answered = True
            response = answer(scope.get("path", ""))
            headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in response.items()]
            # The rest of the body is never read, so the connection cannot carry another request.
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": [*headers, (b"connection", b"close")]})
            await send({"type": "http.response.body", "body": response.content})

        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                return await refuse()
        received = 0
        body_done = False
        deadline = asyncio.get_running_loop().time() + settings.REQUEST_BODY_TIMEOUT

        async def counting_receive():
            nonlocal received, body_done
            if body_done:
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                if not answered:
                    await refuse(too_slow)
                return {"type": "http.disconnect"}
            body_done = message["type"] != "http.request" or not message.get("more_body", False)
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit and not answered:
                    await refuse()
                    # Django stops reading and answers nothing on a disconnect.
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message):
            if not answered:
                await send(message)

        await self.app(scope, counting_receive, guarded_send)
