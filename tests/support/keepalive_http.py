"""A raw HTTP/1.1 server that keeps connections alive, for the tests of the model transport's pool
(providers/aiohttp_transport.py): each connection answers its first `answers` requests with `body`
(Content-Length, keep-alive), then does `after` to the next one: "close" (the server's idle timer
fired as the request arrived: closed without an answer) or "reset" (an RST). Counts connections and
requests, so tests count instead of timing."""
from __future__ import annotations

import socket
import struct
import threading


class KeepAliveServer:
    def __init__(self, body: bytes, *, answers: int = 1, after: str = "close",
                 content_type: str = "text/event-stream") -> None:
        self.body, self.answers, self.after, self.content_type = body, answers, after, content_type
        self.connections = 0
        self.requests: list[tuple[int, int]] = []  # (connection number, request number on it), from 1
        self.dropped: list[tuple[int, int]] = []  # the requests closed or reset without an answer
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def close(self) -> None:
        self._sock.close()
        for conn in self._open:
            conn.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            self._open.append(conn)
            threading.Thread(target=self._serve, args=(conn, self.connections), daemon=True).start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        reader = conn.makefile("rb")
        served = 0
        try:
            while _read_request(reader):
                served += 1
                self.requests.append((number, served))
                if served > self.answers:
                    self.dropped.append((number, served))
                    if self.after == "reset":
                        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    conn.close()
                    return
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: %b\r\nContent-Length: %d\r\n"
                             b"Connection: keep-alive\r\n\r\n%b" % (self.content_type.encode(), len(self.body),
                                                                     self.body))
        except OSError:
            pass
        finally:
            conn.close()


def _read_request(reader) -> bool:
    """Reads one request (head and Content-Length body); False at the end of the connection."""
    line = reader.readline()
    if not line:
        return False
    length = 0
    while (header := reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = header.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    reader.read(length)
    return True
