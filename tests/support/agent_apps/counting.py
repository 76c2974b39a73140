"""An ASGI wrapper around an agent app that counts, at the agent's side, how its runs' requests ended.

Each POST is counted once, when the app returns: `answered` when the whole response was sent,
`disconnected` when the caller left before that (the app read `http.disconnect`, or a send failed),
`unfinished` otherwise. `GET /_counts` answers the counts as JSON (tests/support/agents.py
`AgentServer.counts`), so a test sees a cancel or a disconnect of this server reach the agent.
"""
from __future__ import annotations

import json
from typing import Any

COUNTS_PATH = "/_counts"


class Counting:
    def __init__(self, app: Any):
        self.app = app
        self.counts = {"started": 0, "answered": 0, "disconnected": 0, "unfinished": 0}

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if scope["path"] == COUNTS_PATH:
            body = json.dumps(self.counts).encode()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        self.counts["started"] += 1
        seen = {"sent": False, "left": False}

        async def counted_receive() -> dict:
            message = await receive()
            if message["type"] == "http.disconnect" and not seen["sent"]:
                seen["left"] = True
            return message

        async def counted_send(message: dict) -> None:
            try:
                await send(message)
            except OSError:
                seen["left"] = True
                raise
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                seen["sent"] = True

        try:
            await self.app(scope, counted_receive, counted_send)
        finally:
            outcome = "answered" if seen["sent"] else "disconnected" if seen["left"] else "unfinished"
            self.counts[outcome] += 1
