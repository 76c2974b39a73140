"""Thread names and suggestions go to the project's models (with their fallbacks), not the server's."""
import asyncio

import pytest

from telemetry.calls import model_complete
from projects.config import ProjectSettings, project_settings_save
from providers.base import ModelRequest
from tests.support.fake_openai import FakeOpenAI, HTTPError, Text

pytestmark = pytest.mark.django_db


def test_a_side_call_uses_the_projects_models_and_falls_back(project, monkeypatch):
    monkeypatch.setenv("SIDE_KEY", "sk-side-1")
    with FakeOpenAI() as first, FakeOpenAI() as second:
        project_settings_save(project, ProjectSettings.model_validate({"models": [
            {"provider": "openai", "model": "m-first", "baseUrl": first.base_url, "apiKey": "env:SIDE_KEY"},
            {"provider": "openai", "model": "m-second", "baseUrl": second.base_url, "apiKey": "env:SIDE_KEY"}]}))
        first.script(HTTPError(503))
        second.script(Text("A title"))
        answer = asyncio.run(model_complete(ModelRequest(messages=[{"role": "user", "content": "hi"}]), project=project,
                                             user_key="alice", kind="name"))
    assert answer.text == "A title"
    assert first.requests[0].body["model"] == "m-first" and second.requests[0].body["model"] == "m-second"
    assert second.requests[0].api_key == "sk-side-1"
