"""Two fake vendors (OpenAI-compatible and Anthropic) and one live server whose environment names
their keys, so projects configured through the project file reach them with `env:` keys."""
from __future__ import annotations

import io
from typing import Iterator

import pytest
from django.core.management import call_command

from tests.conftest import Api
from tests.runs.conftest import Runs
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import FakeOpenAI
from tests.support.fixtures_openai import vendor_view
from tests.support.live import LiveServer

OPENAI_KEY = "sk-openai-fake-key-0001"
ANTHROPIC_KEY = "sk-ant-fake-key-0002"


# The fakes and the server are shared by every module of tests/models (each test has its own view of a
# fake, and its own projects): the server started once per worker instead of once per module (15
# starts of about 3 s of CPU each).
@pytest.fixture(scope="session")
def openai_vendor() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture(scope="session")
def anthropic_vendor() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def oai(openai_vendor):
    with vendor_view(openai_vendor) as view:
        yield view


@pytest.fixture
def ant(anthropic_vendor):
    with vendor_view(anthropic_vendor) as view:
        yield view


@pytest.fixture(scope="session")
def models_server(openai_vendor, anthropic_vendor, django_db_setup, django_db_blocker) -> Iterator[LiveServer]:
    # The server's own default stays the offline model: only the projects name the fakes.
    # Alive beside the takeover tests' servers on the same database: it takes no run over, as the
    # shared offline server (tests/conftest.py).
    server = LiveServer("models", {"FAKE_OPENAI_KEY": OPENAI_KEY, "FAKE_ANTHROPIC_KEY": ANTHROPIC_KEY,
                                   "RUN_TAKEOVERS_PER_PROCESS": "0"})
    yield server
    server.stop()


@pytest.fixture
def models_url(models_server, transactional_db) -> Iterator[str]:
    from tests.conftest import wait_for_idle_threads

    yield models_server.url
    wait_for_idle_threads()


def apply_file(tmp_path, text: str) -> str:
    path = tmp_path / "projects.yaml"
    path.write_text(text)
    out = io.StringIO()
    call_command("apply_projects", str(path), stdout=out)
    return out.getvalue()


def vendor_projects(tmp_path, oai, ant, prefix: str) -> tuple[str, str]:
    """Two projects by the project file: `<prefix>-openai` on the OpenAI fake, `<prefix>-anthropic` on the
    Anthropic one (`oai`, `ant`: the tests' views of the two vendors); answers their names."""
    names = f"{prefix}-openai", f"{prefix}-anthropic"
    apply_file(tmp_path, f"""
projects:
  - name: {names[0]}
    models: [{openai_model(oai.fake)}]
  - name: {names[1]}
    models: [{anthropic_model(ant.fake)}]
""")
    return names


def openai_model(vendor: FakeOpenAI, model: str = "gpt-fake", key: str = "env:FAKE_OPENAI_KEY") -> str:
    return f"{{provider: openai, model: {model}, baseUrl: '{vendor.base_url}', apiKey: '{key}'}}"


def anthropic_model(vendor: FakeAnthropic, model: str = "claude-fake", key: str = "env:FAKE_ANTHROPIC_KEY") -> str:
    return f"{{provider: anthropic, model: {model}, baseUrl: '{vendor.base_url}', apiKey: '{key}'}}"


def project_runs(url: str, name: str) -> Runs:
    from projects.models import ApiKey, Project

    _, raw = ApiKey.generate(Project.objects.get(name=name), "tests")
    return Runs(Api(url, raw))
