"""A request head longer than MAX_REQUEST_HEAD_BYTES is answered 431 and its connection closed before
the parser buffers it (tambo_project/http_guard.py): before, a 20 MB header was read whole and 60 of
them took the process from 408 MB to 2.8 GB. Against a real uvicorn server with the guarded protocol."""
from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest
import requests

from tests.support.live import LiveServer
from tests.support.raw_socket import outcome

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 64 * 1024  # the default


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker):
    server = LiveServer("head-limit")
    yield server
    server.stop()


def send_head(url: str, head: bytes) -> bytes:
    """Send `head` in 16 KB writes (the server may close before it has all of it); its answer."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        try:
            for start in range(0, len(head), 16384):
                sock.sendall(head[start:start + 16384])
        except (BrokenPipeError, ConnectionResetError):
            pass
        return outcome(sock)


def healthz_head(header_bytes: int, name: str = "X-Big") -> bytes:
    return (f"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{name}: ".encode()
            + b"a" * header_bytes + b"\r\n\r\n")


def test_it_answers_431_to_an_oversized_header_and_keeps_serving(server):
    answer = send_head(server.url, healthz_head(2 * 1024 * 1024))
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431"), answer[:300]
    assert b"REQUEST_HEADER_FIELDS_TOO_LARGE" in body
    assert requests.get(server.url + "/healthz", timeout=10).status_code == 200


def test_a_2mb_authorization_header_is_not_parsed(server):
    answer = send_head(server.url, healthz_head(2 * 1024 * 1024, name="Authorization").replace(
        b"/healthz", b"/v1/threads"))
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431"), answer[:300]
    # In the v1 API's shape: problem+json.
    assert b"application/problem+json" in head and b'"status":431' in body.replace(b" ", b"")


def test_a_head_just_under_the_limit_is_served(server):
    answer = send_head(server.url, healthz_head(LIMIT - 200))
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]


def test_a_head_over_the_limit_sent_in_one_write_is_refused(server):
    # The whole head in one read: its end is found in the same read, and its length still counts.
    parts = urlsplit(server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(healthz_head(LIMIT + 10))
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 431"), answer[:300]
