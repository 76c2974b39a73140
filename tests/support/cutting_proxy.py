"""A TCP proxy in front of a live server that drops a run's stream part way, for real.

Every connection is passed through to the upstream server byte for byte, except that the first
`cuts` connections that send a request whose first line matches `arm` (by default: starting a
run) are cut once `cut_after` bytes of the answer have come back: both sockets are shut down, as
a network failure would. The client sees a body that stops mid-stream; the server sees its client
go away.
"""
from __future__ import annotations

import re
import socket
import threading

START_RUN = re.compile(rb"^POST /v1/threads/(?:[^/ ]+/)?runs[ ?]")


class CuttingProxy:
    def __init__(self, upstream_port: int, *, cut_after: int, cuts: int = 1, arm: re.Pattern[bytes] = START_RUN):
        self.upstream_port = upstream_port
        self.cut_after = cut_after
        self.arm = arm
        self._cuts_left = cuts
        self._lock = threading.Lock()
        #: How many connections were cut so far.
        self.cut_count = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> CuttingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._listener.close()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            _Connection(self, client, upstream).start()

    def take_cut(self) -> bool:
        with self._lock:
            if self._cuts_left <= 0:
                return False
            self._cuts_left -= 1
            return True


class _Connection:
    """One proxied connection: two pumps; the answer's pump counts bytes once the request arms it."""

    def __init__(self, proxy: CuttingProxy, client: socket.socket, upstream: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.upstream = upstream
        self.armed = False
        self.sent_after_arming = 0
        self.closed = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._requests, daemon=True).start()
        threading.Thread(target=self._answers, daemon=True).start()

    def _requests(self) -> None:
        """Client → server. A request line is assumed to arrive at the start of a read, which holds
        for `requests` (it writes the head in one go, and never pipelines)."""
        while data := self._recv(self.client):
            if not self.armed and self.proxy.arm.match(data) and self.proxy.take_cut():
                self.armed = True
            if not self._send(self.upstream, data):
                break
        self._close()

    def _answers(self) -> None:
        while data := self._recv(self.upstream):
            if self.armed:
                room = self.proxy.cut_after - self.sent_after_arming
                if len(data) >= room:
                    self._send(self.client, data[:room])
                    self.proxy.cut_count += 1
                    break
                self.sent_after_arming += len(data)
            if not self._send(self.client, data):
                break
        self._close()

    @staticmethod
    def _recv(sock: socket.socket) -> bytes:
        try:
            return sock.recv(65536)
        except OSError:
            return b""

    @staticmethod
    def _send(sock: socket.socket, data: bytes) -> bool:
        try:
            sock.sendall(data)
            return True
        except OSError:
            return False

    def _close(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        for sock in (self.client, self.upstream):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
