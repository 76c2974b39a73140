"""Shared fixtures: a live uvicorn server on the test database, API keys, and the parts tests need.

In CI (CI=true) a missing part fails the test; locally it skips with a message saying how to
install it (`require_part`).
"""
from __future__ import annotations

import os
from typing import Iterator

import pytest
import requests

from tests.support.fixtures_openai import fake_openai  # noqa: F401 - fixture
from tests.support.live import LiveServer

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_part(available: bool, how_to_install: str) -> None:
    if available:
        return
    if IN_CI:
        pytest.fail(f"A part this test needs is missing: {how_to_install}")
    pytest.skip(f"missing part: {how_to_install}")


@pytest.fixture(scope="session", autouse=True)
def _fast_flush() -> None:
    """Transactional tests end with one transaction of DELETEs, not Django's flush: tests/support/fast_flush.py."""
    from tests.support import fast_flush

    fast_flush.install()


@pytest.fixture(autouse=True)
def _starting_runs_forgotten() -> Iterator[None]:
    """Runs a test's direct lock calls noted as starting (runs/starting.py) are not renewed for the next
    test by a watcher running in the test process."""
    yield
    from runs.starting import starting_clear

    starting_clear()


@pytest.fixture(scope="session")
def live_server_process(django_db_setup, django_db_blocker) -> Iterator[LiveServer]:
    # It takes no run over (docs/operations.md#takeover): its lease settings are not those of the
    # processes a test starts on the same database, and it must not go on with their runs.
    server = LiveServer("offline", {"RUN_TAKEOVERS_PER_PROCESS": "0"})
    yield server
    server.stop()


@pytest.fixture
def live_server_url(live_server_process, transactional_db) -> Iterator[str]:
    """The base URL of a running server (offline model). Data written by the test is committed.

    At the end it waits for the server to finish the test's runs (a cancelled run still stores its
    partial message and releases its lock), so the database flush never races the server's writes.
    """
    yield live_server_process.url
    wait_for_idle_threads()


def wait_for_idle_threads(timeout: float = 15.0) -> None:
    """Waits until the server has finished every run it was given; fails the test after `timeout`.

    Only runs started through the API count (their request parameters are recorded when the lock is
    taken): a lock a test takes by hand, standing for another process, is left to the flush.
    """
    import time

    deadline = time.monotonic() + timeout
    while busy := _threads_running_server_runs():
        if time.monotonic() >= deadline:
            # A run that never ends is a bug worth a failure, and flushing under it would race its writes.
            pytest.fail(f"threads still running {timeout} s after the test: {busy}")
        time.sleep(0.05)


def _threads_running_server_runs() -> list[tuple[str, str]]:
    from runs.models import Run
    from threads.models import RunStatus, Thread

    busy = Thread.objects.exclude(run_status=RunStatus.IDLE)
    server_runs = Run.objects.filter(id__in=busy.values("current_run_id")).exclude(request_params={})
    return list(busy.filter(current_run_id__in=server_runs.values("id")).values_list("id", "run_status"))


@pytest.fixture
def project(transactional_db):
    from projects.models import Project

    return Project.objects.create(name="test-project")


@pytest.fixture
def api_key(project) -> str:
    from projects.models import ApiKey

    _, raw = ApiKey.generate(project, "tests")
    return raw


@pytest.fixture
def other_project_key(transactional_db) -> str:
    from projects.models import ApiKey, Project

    other = Project.objects.create(name="other-project")
    _, raw = ApiKey.generate(other, "other")
    return raw


class Api:
    """A tiny HTTP helper bound to one server and key."""

    def __init__(self, base_url: str, key: str | None, user_key: str = "alice"):
        self.base_url = base_url
        self.session = requests.Session()
        if key:
            self.session.headers["x-api-key"] = key
        self.user_key = user_key

    def get(self, path: str, **params) -> requests.Response:
        params.setdefault("userKey", self.user_key)
        return self.session.get(self.base_url + path, params={k: v for k, v in params.items() if v is not None},
                                timeout=30)

    def post(self, path: str, body: dict, stream: bool = False, **kwargs) -> requests.Response:
        return self.session.post(self.base_url + path, json=body, stream=stream, timeout=30, **kwargs)

    def patch(self, path: str, body: dict, **params) -> requests.Response:
        params.setdefault("userKey", self.user_key)
        return self.session.patch(self.base_url + path, json=body, params=params, timeout=30)

    def delete(self, path: str, **params) -> requests.Response:
        params.setdefault("userKey", self.user_key)
        return self.session.delete(self.base_url + path, params=params, timeout=30)

    def thread(self, thread_id: str) -> dict:
        """GET /v1/threads/{id}, which must succeed."""
        response = self.get(f"/v1/threads/{thread_id}")
        assert response.status_code == 200, response.text
        return response.json()

    def block(self, thread_id: str, type_: str, **match: str) -> dict:
        """The first stored content block of `type_` on the thread whose fields equal `match`."""
        for message in self.thread(thread_id)["messages"]:
            for block in message["content"]:
                if block["type"] == type_ and all(block.get(k) == v for k, v in match.items()):
                    return block
        raise AssertionError(f"no {type_} block {match} on thread {thread_id}")


@pytest.fixture
def api(live_server_url, api_key) -> Api:
    return Api(live_server_url, api_key)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Appends each test's start and wall time (fixtures included) to test-artifacts/timeline-<worker>.tsv:
    where a suite's minutes go, and how evenly the workers share them (docs/testing.md#where-the-time-goes)."""
    import time
    from pathlib import Path

    started, cpu = time.time(), _cpu_seconds()
    yield
    from tests.support.live import worker_name

    folder = Path(__file__).resolve().parent.parent / "test-artifacts"
    folder.mkdir(exist_ok=True)
    with open(folder / f"timeline-{worker_name()}.tsv", "a") as out:
        # CPU: this worker's own, and its children's as they are reaped (a server a fixture stops);
        # wall minus CPU is what the test waited for (sleeps, a server starting, another process).
        own, children = (now - then for now, then in zip(_cpu_seconds(), cpu))
        out.write(f"{started:.2f}\t{time.time() - started:.2f}\t{item.nodeid}\t{own:.2f}\t{children:.2f}\n")


def _cpu_seconds() -> tuple[float, float]:
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime
