"""uvicorn's HTTP protocol with a deadline and a size limit for each request's head:
`--http tambo_project.http_guard:GuardedHTTPProtocol` (bin/serve, tambo-server and the image pass it).

uvicorn closes an idle keep-alive connection, but a connection that sends part of a request's
headers and then nothing (a slowloris client) is kept for ever: 1,500 of them were all still open
after 71 s. Here a connection must deliver a whole request head within REQUEST_HEADER_TIMEOUT
seconds of opening, and of the end of its previous response; otherwise it is closed. A request whose
headers came is not affected (its body has its own deadline: tambo_project/asgi_limits.py), nor is
a response that streams for as long as it likes.

httptools buffers a head until its end has come, with no limit of its own: 60 connections each
sending a 20 MB header took the process from 408 MB to 2.8 GB. So the bytes of a head are counted
as they arrive, before the parser sees them, and a head longer than MAX_REQUEST_HEAD_BYTES is
answered 431 and its connection closed: at most that much plus one read is ever held for a head.
The counting needs the httptools protocol's callbacks (uvicorn[standard] installs httptools).
"""
from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEAD_END = b"\r\n\r\n"


class GuardedHTTPProtocol(HttpToolsProtocol):
    _head_deadline: asyncio.TimerHandle | None = None
    # The head being read: its bytes so far, its first bytes (for the path of the 431) and the
    # last three bytes seen (a head's end may be split between two reads).
    _reading_head = True
    _head_bytes = 0
    _head_start = b""
    _head_tail = b""

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

    def data_received(self, data: bytes) -> None:
        from django.conf import settings

        if self._reading_head:
            seen = self._head_tail + data
            end = seen.find(HEAD_END)
            self._head_bytes += len(data) if end < 0 else max(0, end + len(HEAD_END) - len(self._head_tail))
            self._head_tail = seen[-(len(HEAD_END) - 1):]
            if len(self._head_start) < 2048:
                self._head_start += data[:2048]
            if self._head_bytes > settings.MAX_REQUEST_HEAD_BYTES:
                self._refuse_head(settings.MAX_REQUEST_HEAD_BYTES)
                return
        super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_head = True

    def on_headers_complete(self) -> None:
        self._reading_head = False
        self._head_bytes, self._head_start, self._head_tail = 0, b"", b""
        super().on_headers_complete()

    def _refuse_head(self, limit: int) -> None:
        """431 in the shape of the route's callers, then close: the rest of the head is never read."""
        from core.error_shapes import error_answer
        from core.problems import Problem

        request_line = self._head_start.split(b"\r\n", 1)[0].split(b" ")
        path = request_line[1].split(b"?", 1)[0].decode("latin-1") if len(request_line) > 1 else "/"
        answer = error_answer(Problem(431, "REQUEST_HEADER_FIELDS_TOO_LARGE",
                                      f"The request's head is larger than {limit} bytes."), path)
        head = [b"HTTP/1.1 431 Request Header Fields Too Large"]
        head += [f"{name}: {value}".encode("latin-1") for name, value in answer.items()]
        head += [b"content-length: %d" % len(answer.content), b"connection: close"]
        self.transport.write(b"\r\n".join(head) + b"\r\n\r\n" + answer.content)
        self.transport.close()
        self._reading_head = False

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
