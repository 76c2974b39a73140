"""The `fake_openai` pytest fixture (tests/conftest.py imports it so every test can ask for it);
`Vendor`, one test's view of a fake shared by a module's tests; and the `vendor` (that shared fake)
and `fake` (the view) fixtures, which a module that starts a server on the vendor imports."""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

import pytest

from tests.support.fake_openai import FakeOpenAI, RecordedRequest


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running scripted OpenAI-compatible server, stopped (stalls included) after the test."""
    with FakeOpenAI() as fake:
        yield fake


class Vendor:
    """The fake vendor as one test sees it: its script, and only the requests made during the test."""

    def __init__(self, fake: FakeOpenAI):
        self.fake = fake
        self._seen = len(fake.requests)

    def script(self, *replies) -> None:
        self.fake.script(*replies)

    @property
    def requests(self) -> list[RecordedRequest]:
        return self.fake.requests[self._seen:]

    def wait_requests(self, count: int, timeout: float = 10.0) -> list[RecordedRequest]:
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            assert time.monotonic() < deadline, f"the vendor got {len(self.requests)} requests, not {count}"
            time.sleep(0.02)
        return self.requests

    def forget_script(self) -> int:
        """Drops the replies no request took; returns how many there were."""
        with self.fake._lock:
            left = len(self.fake._script)
            self.fake._script.clear()
        return left


@contextmanager
def vendor_view(fake: FakeOpenAI) -> Iterator[Vendor]:
    """One test's `Vendor`; a test that leaves replies behind would hand them to the next one, so they
    are dropped and the test fails."""
    view = Vendor(fake)
    yield view
    assert view.forget_script() == 0, "the test left scripted replies unused"


@pytest.fixture(scope="module")
def vendor() -> Iterator[FakeOpenAI]:
    """A scripted fake vendor shared by the tests of one module (a server is started on it once)."""
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def fake(vendor) -> Iterator[Vendor]:
    """This test's view of the module's vendor."""
    with vendor_view(vendor) as view:
        yield view
