"""TCP servers that stall their clients, for the tests of what a stall costs: one that accepts
connections and never answers (`HangingListener`), one that answers a byte at a time (`TricklingServer`).
Each counts what it did, so tests count instead of timing."""
from __future__ import annotations

import socket
import threading
import time


class HangingListener:
    """Accepts connections and never answers them; counts the connections."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.accepted: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(connection)

    def close(self) -> None:
        self.sock.close()
        for connection in self.accepted:
            connection.close()

    def __enter__(self) -> "HangingListener":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class TricklingServer(HangingListener):
    """Answers every request with a 200 whose `body` goes out one byte every `interval` seconds;
    counts the bytes sent (`sent`)."""

    def __init__(self, body: bytes, interval: float) -> None:
        self.body, self.interval, self.sent = body, interval, 0
        super().__init__()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(connection)
            threading.Thread(target=self._trickle, args=(connection,), daemon=True).start()

    def _trickle(self, connection: socket.socket) -> None:
        try:
            connection.recv(65536)
            head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(self.body)}\r\n"
                    "Connection: close\r\n\r\n").encode()
            connection.sendall(head)
            for byte in self.body:
                time.sleep(self.interval)
                connection.sendall(bytes([byte]))
                self.sent += 1
        except OSError:
            return
