"""A tiny local HTTP server that answers from a script, for testing the client without the real server.

Each route (method, path) has a list of replies; each request takes the next one (the last one
repeats). A reply is a `Reply`: a status, headers and either a body or a list of chunks to write
with pauses in between (for SSE), optionally with chunked transfer-encoding.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    # A float is a pause in seconds; a threading.Event is waited for (at most 5 s).
    chunks: list[Any] | None = None
    chunked: bool = False
    delay: float = 0.0  # before anything is sent

    @classmethod
    def json(cls, status: int, payload: Any, **headers: str) -> Reply:
        ctype = "application/problem+json" if status >= 400 else "application/json"
        return cls(status, {"Content-Type": ctype, **headers}, json.dumps(payload).encode())

    @classmethod
    def problem(cls, status: int, code: str, detail: str = "it failed", **headers: str) -> Reply:
        return cls.json(status, {"type": f"urn:tambo:error:{code.lower()}", "title": code, "status": status,
                                 "detail": detail, "instance": "/x", "code": code}, **headers)

    @classmethod
    def sse(cls, events: list[Any], headers: dict[str, str] | None = None, **kw: Any) -> Reply:
        chunks = [e if isinstance(e, (float, threading.Event)) else f"data: {json.dumps(e)}\n\n".encode()
                  for e in events]
        return cls(200, {"Content-Type": "text/event-stream", **(headers or {})}, chunks=chunks, **kw)


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


# A thread as the server answers it, for scripted replies.
THREAD = {"id": "thr_1", "userKey": "alice", "runStatus": "idle", "createdAt": "2025-01-01T00:00:00Z",
          "updatedAt": "2025-01-01T00:00:00Z"}


class ScriptedServer:
    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], list[Reply]] = {}
        self.requests: list[Recorded] = []
        self.disconnected = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                url = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                server.requests.append(Recorded(self.command, url.path, parse_qs(url.query), dict(self.headers),
                                                json.loads(raw) if raw else None))
                replies = server.routes.get((self.command, url.path))
                reply = (replies.pop(0) if len(replies) > 1 else replies[0]) if replies else Reply.problem(404, "NOT_SCRIPTED")
                server._send(self, reply)

            do_GET = do_POST = do_PATCH = do_DELETE = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _send(self, h: BaseHTTPRequestHandler, reply: Reply) -> None:
        if reply.delay:
            time.sleep(reply.delay)
        h.send_response(reply.status)
        for k, v in reply.headers.items():
            h.send_header(k, v)
        if reply.chunks is None:
            h.send_header("Content-Length", str(len(reply.body)))
            h.end_headers()
            h.wfile.write(reply.body)
            return
        if reply.chunked:
            h.send_header("Transfer-Encoding", "chunked")
        else:
            h.send_header("Connection", "close")  # body ends when the connection closes
        h.end_headers()
        try:
            for chunk in reply.chunks:
                if isinstance(chunk, float):
                    time.sleep(chunk)
                    continue
                if isinstance(chunk, threading.Event):
                    chunk.wait(5)
                    continue
                h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if reply.chunked else chunk)
                h.wfile.flush()
            if reply.chunked:
                h.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.disconnected.set()
        h.close_connection = True

    def add(self, method: str, path: str, *replies: Reply) -> None:
        self.routes[(method, path)] = list(replies)

    def calls(self, method: str, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method and r.path == path]

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
