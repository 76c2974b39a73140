"""uvicorn's HTTP protocol with a deadline for each request's headers: `--http tambo_project.http_guard:GuardedHTTPProtocol`
(bin/serve passes it).

uvicorn closes an idle keep-alive connection, but a connection that sends part of a request's
headers and then nothing (a slowloris client) is kept for ever: 1,500 of them were all still open
after 71 s. Here a connection must deliver a whole request head within REQUEST_HEADER_TIMEOUT
seconds of opening, and of the end of its previous response; otherwise it is closed. A request whose
headers came is not affected (its body has its own deadline: tambo_project/asgi_limits.py), nor is
a response that streams for as long as it likes.
"""
from __future__ import annotations

import asyncio

from uvicorn.protocols.http.auto import AutoHTTPProtocol


class GuardedHTTPProtocol(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
    _head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
        super().connection_lost(exc)

    def _arm_head_deadline(self) -> None:
        from django.conf import settings  # configured by now: uvicorn loaded the app before serving

        if self._head_deadline is not None:
            self._head_deadline.cancel()
        self._head_deadline = self.loop.call_later(settings.REQUEST_HEADER_TIMEOUT, self._head_deadline_passed,
                                                   self.cycle)

    def _head_deadline_passed(self, awaited) -> None:
        # No new request since the deadline was set, and none in progress: the head is late.
        idle = self.cycle is awaited and (awaited is None or awaited.response_complete)
        if idle and not self.transport.is_closing():
            self.transport.close()
