"""Resumable runs' limits (docs/protocol.md#resumable-runs): the replay window closes (404, rows removed) and a reader
that falls behind what memory holds is cut with `tambo.stream.lagged`, from which it resumes.

Servers of their own: one with a 1-second replay window, one with a 20 KB per-run event buffer.
"""
from __future__ import annotations

import json
import socket
import time

import pytest

from tests.conftest import Api, wait_for_idle_threads
from tests.support.live import LiveServer
from tests.support.problems import assert_problem
from tests.support.sse import decode_frames, read_frames

pytestmark = pytest.mark.both_dbs

BUFFER_BYTES = 20_000


def _socket_buffers() -> int:
    """The most a server's socket send buffer grows to (Linux: tcp_wmem's maximum)."""
    try:
        return int(open("/proc/sys/net/ipv4/tcp_wmem").read().split()[2])
    except (OSError, IndexError, ValueError):
        return 4_000_000


BIG = "0123456789abcdefghi " * (max(6_000_000, _socket_buffers() + 2_000_000) // 20)


@pytest.fixture
def short_replay_server(django_db_setup, django_db_blocker):
    # Stopped right after its test: its watcher removes the events of every run that ended more than
    # a second ago, whichever process ran it (the window is the deployment's, one for all processes).
    server = LiveServer("resume-replay", {"RUN_REPLAY_SECONDS": "1"})
    yield server
    server.stop()


@pytest.fixture(scope="module")
def small_buffer_server(django_db_setup, django_db_blocker):
    # The offline model echoes a message of several MB at full speed: more than the kernel's socket
    # buffers hold for a client that reads nothing.
    # Events not yet in the event log stay in memory, and on SQLite the log is written at the watcher's
    # pace: a short interval, so that a run this fast cannot put the whole answer in one unwritten batch.
    server = LiveServer("resume-buffer", {"RUN_EVENTS_BUFFER_BYTES": str(BUFFER_BYTES), "OFFLINE_MODEL_DELAY": "0",
                                          "MAX_REQUEST_BYTES": str(len(BIG) + 100_000), "RUN_WATCH_INTERVAL": "0.02",
                                          # megabytes of text: past the safe default context budget
                                          "DEFAULT_MAX_INPUT_TOKENS": "10000000"})
    yield server
    server.stop()


@pytest.fixture
def short_replay(short_replay_server, api_key):
    yield Api(short_replay_server.url, api_key)
    wait_for_idle_threads()


@pytest.fixture
def small_buffer(small_buffer_server, api_key):
    yield Api(small_buffer_server.url, api_key)
    wait_for_idle_threads()


def body(text: str, **extra) -> dict:
    return {"userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": text}]}, **extra}


def get_events(api: Api, thread_id: str, run_id: str, **headers):
    return api.session.get(f"{api.base_url}/v1/threads/{thread_id}/runs/{run_id}/events",
                           params={"userKey": "alice"}, headers=headers, stream=True, timeout=30)


def event_rows(run_id: str) -> int:
    from runs.models import RunEvent

    return RunEvent.objects.filter(run_id=run_id).count()


def test_after_the_replay_window_the_run_is_not_found_and_its_events_are_gone(short_replay):
    api = short_replay
    response = api.post("/v1/threads/runs", body("hello"), stream=True)
    frames = read_frames(response)
    thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
    deadline = time.monotonic() + 30
    while event_rows(run_id) or get_events(api, thread_id, run_id).status_code != 404:
        assert time.monotonic() < deadline, "the replay window never closed"
        time.sleep(0.1)
    assert frames and event_rows(run_id) == 0
    assert_problem(get_events(api, thread_id, run_id), 404, "RUN_NOT_FOUND")


def stalled_request(url: str, key: str, method: str, path: str, payload: dict | None = None) -> socket.socket:
    """Sends a request on a socket with a tiny receive buffer and reads nothing yet."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    data = json.dumps(payload).encode() if payload is not None else b""
    sock.sendall(b"%b %b HTTP/1.1\r\nHost: %b\r\nx-api-key: %b\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\nConnection: close\r\n\r\n%b"
                 % (method.encode(), path.encode(), host.encode(), key.encode(), len(data), data))
    return sock


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    sock.close()
    return b"".join(chunks)


def _frames(raw: bytes) -> tuple[dict[str, str], list[tuple[int | None, dict]]]:
    head, _, rest = raw.partition(b"\r\n\r\n")
    headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in head.decode().split("\r\n")[1:])}
    text = _unchunk(rest) if headers.get("transfer-encoding") == "chunked" else rest
    return headers, list(decode_frames([text]))


def _unchunk(body: bytes) -> bytes:
    out = []
    while body:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        out.append(body[:size])
        body = body[size + 2:]
    return b"".join(out)


def test_a_reader_that_falls_behind_is_cut_and_resumes_from_the_last_id_it_got(small_buffer):
    from runs.models import RunEvent

    api = small_buffer
    sock = stalled_request(api.base_url, api.session.headers["x-api-key"], "POST", "/v1/threads/runs",
                           body(BIG, onDisconnect="continue"))
    # It reads nothing until the run's last event is in the event log: far more than the buffer was
    # produced meanwhile. (Until written there, events stay in memory whatever their size: a reader
    # that read on before the last ones were written could still get them all.) The moment after
    # lets the server drop what the write made droppable.
    # A hang guard, not a speed check: on a loaded 2-core machine the echo of several MB took over 60 s.
    deadline = time.monotonic() + 300
    while not RunEvent.objects.filter(final=True).exists():
        assert time.monotonic() < deadline, "the run never logged its last event"
        time.sleep(0.1)
    time.sleep(0.5)
    headers, got = _frames(_read_all(sock))
    thread_id, run_id = headers["x-thread-id"], headers["x-run-id"]

    lagged = got[-1]
    assert lagged[0] is None and lagged[1]["type"] == "CUSTOM" and lagged[1]["name"] == "tambo.stream.lagged"
    last = lagged[1]["value"]["lastEventId"]
    kept = got[:-1]
    assert [seq for seq, _ in kept] == list(range(1, last + 1))

    rest = get_events(api, thread_id, run_id, **{"Last-Event-ID": str(last)})
    assert rest.status_code == 200, rest.text
    rest = read_frames(rest)
    whole = get_events(api, thread_id, run_id)
    assert whole.status_code == 200, whole.text
    whole = read_frames(whole)
    assert kept + rest == whole
    assert whole[-1][1]["type"] == "RUN_FINISHED"
    text = "".join(e["delta"] for _, e in whole if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert BIG in text
