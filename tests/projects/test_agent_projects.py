"""A project backed by an external agent in the project file (docs/projects.md#a-project-backed-by-an-agent)."""
from __future__ import annotations

import io
import json

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command

from projects.config import project_settings
from projects.models import Project
from projects.models_config import model_chain_for
from projects.secrets import secret_resolve
from tests.projects.test_apply_projects import GOOD, apply, refused

pytestmark = pytest.mark.django_db

AGENT = """
projects:
  - name: desk
    models:
      - provider: agent
        protocol: langgraph
        url: https://agents.example/support/agui
        name: support
        headers: {Authorization: env:SUPPORT_AGENT_TOKEN}
        timeoutSeconds: 120
"""


def test_an_agent_is_a_projects_model_with_its_url_headers_and_name(tmp_path, monkeypatch):
    assert apply(tmp_path, AGENT).strip() == "desk: created"
    assert "No changes" in apply(tmp_path, AGENT)
    project = Project.objects.get(name="desk")
    (target,) = model_chain_for(project, requested=None).targets
    assert (target.provider, target.label, target.base_url, target.timeout) == \
        ("agent", "agent:support", "https://agents.example/support/agui", 120)
    monkeypatch.setenv("SUPPORT_AGENT_TOKEN", "Bearer t0ken")
    endpoint = target.endpoint()  # headers are resolved when the call is made
    assert endpoint.headers == (("Authorization", "Bearer t0ken"),)
    assert model_chain_for(project, requested=None).operation == "invoke_agent"


def test_tambo_clouds_names_are_accepted_and_stored_under_the_files_names(tmp_path):
    apply(tmp_path, """
projects:
  - name: cloud
    models:
      - {provider: agent, agentProviderType: pydantic-ai, agentUrl: "http://127.0.0.1:9000/agent",
         agentName: helper, agentHeaders: {X-Team: env:TEAM}}
""")
    stored = Project.objects.get(name="cloud").settings["models"][0]
    assert stored == {"provider": "agent", "protocol": "pydantic-ai", "url": "http://127.0.0.1:9000/agent",
                      "name": "helper", "headers": {"X-Team": "env:TEAM"}}
    assert project_settings(Project.objects.get(name="cloud")).models[0].label_model == "helper"


@pytest.mark.parametrize("model, path, words", [
    ("{provider: agent, name: x}", "projects[1].models[0]", "needs its url"),
    ("{provider: agent, url: 'ftp://x/agent'}", "projects[1].models[0]", "needs its url"),
    ("{provider: agent, url: 'http://x/a', apiKey: env:K}", "projects[1].models[0]", "not apiKey"),
    ("{provider: openai, model: m, url: 'http://x/a'}", "projects[1].models[0]", "only a model of provider agent"),
    ("{provider: openai}", "projects[1].models[0]", "model is required"),
    ("{provider: agent, url: 'http://x/a', protocol: autogen}", "projects[1].models[0].protocol", ""),
    ("{provider: agent, url: 'http://x/a', headers: {'Bad Header': v}}", "projects[1].models[0]", "not a header"),
])
def test_a_bad_agent_is_refused_naming_the_path(tmp_path, model, path, words):
    message = refused(tmp_path, GOOD + f"  - name: a\n    models: [{model}]\n")
    assert path in message and words in message, message


def test_a_literal_header_is_stored_encrypted_and_rotatable(tmp_path, settings):
    old_key, new_key = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.SECRETS_KEYS = [old_key]
    text = ("projects:\n  - name: k\n    models: [{provider: agent, url: 'http://a/agent', "
            "headers: {Authorization: Bearer literal-123456789}}]\n")
    apply(tmp_path, text)
    stored = Project.objects.get(name="k").settings["models"][0]["headers"]["Authorization"]
    assert stored.startswith("fernet:") and "literal" not in json.dumps(Project.objects.get(name="k").settings)
    assert secret_resolve(stored) == "Bearer literal-123456789"
    assert "No changes" in apply(tmp_path, text)
    settings.SECRETS_KEYS = [new_key, old_key]
    call_command("rotate_secrets", stdout=io.StringIO())
    rotated = Project.objects.get(name="k").settings["models"][0]["headers"]["Authorization"]
    settings.SECRETS_KEYS = [new_key]
    assert rotated != stored and secret_resolve(rotated) == "Bearer literal-123456789"
