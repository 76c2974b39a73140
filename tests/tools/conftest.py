"""Fixtures for the tools tests: a live server whose model is the scripted OpenAI fake.

`openai_live` is shared by the modules of tests/tools (session scope, per worker): one fake and one
server instead of one each per module (six starts of about 3 s of CPU). Tests ask for `fake` (checked
to hold no replies a previous test left scripted; tests count the fake's requests from their own
start) and `oapi` (an `Api` on that server with the project key).
"""
from __future__ import annotations

from typing import Iterator

import pytest

from tests.conftest import Api
from tests.support.fake_openai import FakeOpenAI
from tests.support.live import LiveServer, openai_live_server


@pytest.fixture(scope="session")
def openai_live(django_db_setup, django_db_blocker) -> Iterator[tuple[FakeOpenAI, LiveServer]]:
    with FakeOpenAI() as fake:
        # Alive beside the takeover tests' servers on the same database: it takes no run over, as
        # the shared offline server (tests/conftest.py).
        with openai_live_server("openai-tools", fake.base_url, "sk-test", RUN_TAKEOVERS_PER_PROCESS="0") as server:
            yield fake, server


@pytest.fixture
def fake(openai_live, transactional_db) -> FakeOpenAI:
    fake, _ = openai_live
    assert fake.pending == 0, "a previous test left scripted replies"
    return fake


@pytest.fixture
def oapi(openai_live, api_key) -> Api:
    return Api(openai_live[1].url, api_key)
