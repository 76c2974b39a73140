"""Slow and incomplete clients are cut while normal runs proceed: a connection that sends half a
request head is closed after REQUEST_HEADER_TIMEOUT (tambo_project/http_guard.py), one that sends its
headers and not its body gets 408 after REQUEST_BODY_TIMEOUT (tambo_project/asgi_limits.py). Against
a real uvicorn server, counting the connections cut."""
from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import pytest

from tests.conftest import Api
from tests.support.live import LiveServer
from tests.support.raw_socket import outcome
from tests.support.run_requests import run, text_of
from tests.support.sse import types

pytestmark = pytest.mark.django_db(transaction=True)

SLOW = 40  # of each kind


@pytest.fixture(scope="module")
def guarded_server(django_db_setup, django_db_blocker):
    server = LiveServer("slow-clients", {"REQUEST_HEADER_TIMEOUT": "2", "REQUEST_BODY_TIMEOUT": "2"})
    yield server
    server.stop()


def open_slow(url: str, payload: bytes) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
    sock.sendall(payload)
    return sock


def test_half_requests_are_cut_while_normal_runs_proceed(guarded_server, api_key):
    api = Api(guarded_server.url, api_key)
    half_heads = [open_slow(guarded_server.url, b"GET /v1/threads HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                  for _ in range(SLOW)]
    no_bodies = [open_slow(guarded_server.url, (
        f"POST /v1/threads HTTP/1.1\r\nHost: x\r\nx-api-key: {api_key}\r\nContent-Type: application/json\r\n"
        "Content-Length: 100\r\n\r\n{").encode()) for _ in range(SLOW)]
    # Normal runs while the slow connections are open.
    runs = [run(api, "hello") for _ in range(3)]
    assert all(types(events)[-1] == "RUN_FINISHED" and text_of(events) for _, events in runs)
    with ThreadPoolExecutor(16) as pool:
        heads = list(pool.map(outcome, half_heads))
        bodies = list(pool.map(outcome, no_bodies))
    # Closed without an answer: no request head ever came.
    assert heads == [b""] * SLOW
    # 408 in the route's shape, then closed.
    for answer in bodies:
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408"), answer[:300]
        assert b"application/problem+json" in head and b'"REQUEST_TIMEOUT"' in body
    # The server still serves.
    assert types(run(api, "still there?")[1])[-1] == "RUN_FINISHED"
