"""The `fake_openai` pytest fixture; tests/conftest.py imports it so every test can ask for it."""
from __future__ import annotations

from typing import Iterator

import pytest

from tests.support.fake_openai import FakeOpenAI


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running scripted OpenAI-compatible server, stopped (stalls included) after the test."""
    with FakeOpenAI() as fake:
        yield fake
