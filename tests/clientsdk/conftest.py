"""Fixtures for the client tests."""
from __future__ import annotations

from typing import Iterator

import pytest

from .scripted_server import ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A scripted HTTP server the test tells what to answer (tests/clientsdk/scripted_server.py)."""
    with ScriptedServer() as s:
        yield s
