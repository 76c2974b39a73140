"""Django's ASGI handler less a thread per request (tambo_project/asgi_handler.py): a run request's
response is closed on the event loop, with no thread started for it, while a synchronous view's is
still closed on the thread its view ran on, where its database connection is.

The requests go through the handler itself (an ASGI call in this process), not Django's test client,
which has a handler of its own.
"""
from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import threading

import pytest
from django.core import signals
from django.core.handlers.asgi import ASGIHandler as DjangoASGIHandler

from providers import reset_providers
from tambo_project.asgi_handler import ASGIHandler

pytestmark = pytest.mark.both_dbs

# The sha256 of Django's `ASGIHandler.handle` source that tambo_project/asgi_handler.py copies
# (Django 5.2). When Django's changes, look at the copy again, then record the new digest.
DJANGO_HANDLE_SHA256 = "98faeb5bef800331e6a8002fbc96b30e4122a23438ae45a047190a531ea11323"


def test_django_s_handle_is_the_one_the_copy_was_made_from():
    source = inspect.getsource(DjangoASGIHandler.handle)
    assert hashlib.sha256(source.encode()).hexdigest() == DJANGO_HANDLE_SHA256


@pytest.fixture
def app_signals():
    """Django's request_started receivers off, as the app's ASGI entry has them (tambo_project/asgi_signals.py)."""
    from django.db import close_old_connections, reset_queries

    from tambo_project import asgi_signals

    asgi_signals.install()
    yield
    signals.request_started.connect(reset_queries)
    signals.request_started.connect(close_old_connections)


@pytest.fixture
def offline(settings, project, app_signals):
    from projects.config import Limits, ProjectSettings, project_settings_save

    project_settings_save(project, ProjectSettings(limits=Limits(runs_per_minute=0)))
    settings.MODEL_PROVIDER = "offline"
    settings.OFFLINE_MODEL_DELAY = 0.0
    reset_providers()
    yield
    reset_providers()


class Finished:
    """`request_finished` as the handler sends it: on which thread, and whether the connection of
    that thread was closed by then (Django's own receiver runs first: it was connected first)."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, bool]] = []

    def __call__(self, sender, **kwargs) -> None:
        from django.db import connections

        self.seen.append((threading.get_ident(), connections["default"].connection is None))


@pytest.fixture
def finished():
    receiver = Finished()
    signals.request_finished.connect(receiver)
    yield receiver
    signals.request_finished.disconnect(receiver)


def _request(method: str, path: str, api_key: str, body: dict | None = None) -> tuple[int, bytes, int, int]:
    """One request through the handler: (status, body, threads started meanwhile other than the
    database workers', the event loop's thread)."""
    started: list[str] = []
    real_start = threading.Thread.start

    def counted(thread):
        started.append(thread.name)
        return real_start(thread)

    path, _, query = path.partition("?")

    async def go():
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                 "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
                 "root_path": "",
                 "headers": [(b"host", b"testserver"), (b"content-type", b"application/json"),
                             (b"x-api-key", api_key.encode())],
                 "client": ("127.0.0.1", 50000), "server": ("testserver", 80)}
        messages = [{"type": "http.request", "body": json.dumps(body).encode() if body else b"", "more_body": False}]
        sent = []

        async def receive():
            if messages:
                return messages.pop()
            await asyncio.Future()  # no disconnect: the handler cancels this wait when it is done

        async def send(message):
            sent.append(message)

        threading.Thread.start = counted
        try:
            await ASGIHandler()(scope, receive, send)
        finally:
            threading.Thread.start = real_start
        status = next(m["status"] for m in sent if m["type"] == "http.response.start")
        return status, b"".join(m.get("body", b"") for m in sent), threading.get_ident()

    # An event loop on a thread of its own, as uvicorn's: under async_to_sync the handler's
    # synchronous work would run on the calling thread instead of a thread of the request's.
    result = []
    runner = threading.Thread(target=lambda: result.append(asyncio.run(go())))
    runner.start()
    runner.join()
    status, content, loop_thread = result[0]
    return status, content, len([name for name in started if not name.startswith("tambo-")]), loop_thread


def _run_body(text: str) -> dict:
    return {"userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}


def test_a_run_request_starts_no_thread_and_is_finished_on_the_event_loop(transactional_db, api_key, offline,
                                                                          finished):
    _request("POST", "/v1/threads/runs", api_key, _run_body("warm up"))  # the database threads start
    finished.seen.clear()
    status, content, threads, loop_thread = _request("POST", "/v1/threads/runs", api_key, _run_body("hello"))
    assert status == 200 and b"RUN_FINISHED" in content, content[-300:]
    # Django's handler started two: the request's thread for `response.close` and the one joining it.
    assert threads == 0
    assert finished.seen == [(loop_thread, True)]


def test_a_synchronous_view_s_request_is_finished_on_its_own_thread_which_closes_its_connection(
        transactional_db, api_key, offline, finished):
    status, content, threads, loop_thread = _request("GET", "/v1/threads?userKey=alice", api_key)
    assert status == 200, content
    assert threads >= 1  # the view ran on the request's own thread (asgiref's ThreadSensitiveContext)
    ((thread, closed),) = finished.seen
    assert thread != loop_thread and closed
