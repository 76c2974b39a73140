"""A request-body size limit at the ASGI edge.

Django checks its upload limit only against Content-Length, and its ASGI handler reads a chunked
body whole before any view runs. This wrapper counts the bytes as they arrive and answers 413 as
soon as the limit is passed, with or without Content-Length, so no request can make the server
buffer an unbounded body.
"""
from __future__ import annotations

import json


def _answer(path: str, limit: int) -> tuple[bytes, bytes]:
    if path.startswith("/api/"):
        body = {"error": {"message": "Request body too large.", "type": "invalid_request_error",
                          "code": "payload_too_large", "param": None}}
        return json.dumps(body).encode(), b"application/json"
    body = {"type": "urn:tambo:error:payload_too_large", "title": "Payload Too Large", "status": 413,
            "detail": f"The request body is larger than {limit} bytes.", "instance": path,
            "code": "PAYLOAD_TOO_LARGE"}
    return json.dumps(body).encode(), b"application/problem+json"


class BodySizeLimit:
    def __init__(self, app, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        answered = False

        async def refuse() -> None:
            nonlocal answered
            answered = True
            payload, content_type = _answer(scope.get("path", ""), self.limit)
            await send({"type": "http.response.start", "status": 413,
                        "headers": [(b"content-type", content_type), (b"connection", b"close")]})
            await send({"type": "http.response.body", "body": payload})

        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                return await refuse()
        received = 0

        async def counting_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit and not answered:
                    await refuse()
                    # Django stops reading and answers nothing on a disconnect.
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message):
            if not answered:
                await send(message)

        await self.app(scope, counting_receive, guarded_send)
