"""Reading what a server did with a raw connection, for the tests that send it what no HTTP client would."""
from __future__ import annotations

import socket


def outcome(sock: socket.socket) -> bytes:
    """What the server did with the connection: its answer until it closed it (b"" for a plain close).
    A connection still open after the client's 30 s timeout raises socket.timeout: the test fails."""
    answer = b""
    try:
        while chunk := sock.recv(65536):
            answer += chunk
    except ConnectionResetError:
        pass
    finally:
        sock.close()
    return answer
