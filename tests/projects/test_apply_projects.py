"""`manage.py apply_projects FILE`: creates and updates projects by name, idempotent, refusing a bad
file whole with the path of the fault; literal keys stored encrypted and rotatable."""
from __future__ import annotations

import io
import json

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command

from projects.config import project_settings
from projects.models import Project
from projects.secrets import secret_hint, secret_resolve

pytestmark = pytest.mark.django_db

SHOP = """
projects:
  - name: shop
    systemPrompt: "You help customers of Shop."
    maxToolCallsPerTurn: 12
    models:
      - provider: anthropic
        model: claude-sonnet-4-5
        apiKey: env:ANTHROPIC_API_KEY
      - provider: openai
        model: gpt-4o-mini
        apiKey: env:OPENAI_API_KEY
        baseUrl: https://api.openai.com/v1
    allowedModels: [claude-haiku-4-5]
    maxInputTokens: 100000
    maxOutputTokens: 4096
    parameters: {temperature: 0.3}
    limits: {runsPerMinutePerUser: 20}
    userTokens: {issuer: "https://auth.example.com/", audience: shop, claim: sub}
"""


def apply(tmp_path, text: str, name: str = "projects.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    out = io.StringIO()
    call_command("apply_projects", str(path), stdout=out)
    return out.getvalue()


def refused(tmp_path, text: str) -> str:
    with pytest.raises(CommandError) as caught:
        apply(tmp_path, text)
    return str(caught.value)


def test_it_creates_the_project_with_every_setting_and_a_second_run_changes_nothing(tmp_path):
    assert apply(tmp_path, SHOP).strip() == "shop: created"
    shop = Project.objects.get(name="shop")
    assert shop.system_prompt == "You help customers of Shop." and shop.max_tool_calls_per_turn == 12
    assert shop.user_token_issuer == "https://auth.example.com/" and shop.user_token_audience == "shop"
    config = project_settings(shop)
    assert [(m.provider, m.model, m.api_key) for m in config.models] == [
        ("anthropic", "claude-sonnet-4-5", "env:ANTHROPIC_API_KEY"), ("openai", "gpt-4o-mini", "env:OPENAI_API_KEY")]
    assert config.max_output_tokens == 4096 and config.parameters == {"temperature": 0.3}
    assert config.limits.runs_per_minute_per_user == 20 and config.allowed_models == ["claude-haiku-4-5"]
    version = shop.settings_version
    assert apply(tmp_path, SHOP).strip() == "No changes: every project already matches the file."
    assert Project.objects.get(name="shop").settings_version == version


def test_it_updates_only_what_changed_and_leaves_other_projects_alone(tmp_path):
    Project.objects.create(name="untouched", system_prompt="Mine.")
    apply(tmp_path, SHOP)
    out = apply(tmp_path, SHOP.replace("maxOutputTokens: 4096", "maxOutputTokens: 2048"))
    assert out.strip() == "shop: maxOutputTokens changed"
    assert project_settings(Project.objects.get(name="shop")).max_output_tokens == 2048
    assert Project.objects.get(name="untouched").system_prompt == "Mine."


def test_a_json_file_works_too(tmp_path):
    text = json.dumps({"projects": [{"name": "api", "models": [{"provider": "offline", "model": "offline"}]}]})
    assert apply(tmp_path, text, "projects.json").strip() == "api: created"
    assert project_settings(Project.objects.get(name="api")).models[0].provider == "offline"


# Each file starts with a good project: it must not be written either.
GOOD = "projects:\n  - name: good-one\n"


@pytest.mark.parametrize("entry, path", [
    ("  - name: a\n    models:\n      - {provider: openai, model: m}\n      - {provider: vertex, model: m}\n",
     "projects[1].models[1].provider"),
    ("  - name: a\n    maxOutputTokenz: 5\n", "projects[1].maxOutputTokenz"),
    ("  - name: a\n    maxOutputTokens: '5'\n", "projects[1].maxOutputTokens"),
    ("  - name: a\n    models: [{provider: openai, model: m, apiKey: 'env:1BAD'}]\n", "projects[1].models[0].apiKey"),
    ("  - name: good-one\n", "projects: "),
    ("  - systemPrompt: x\n", "projects[1].name"),
    ("  - name: a\n    maxInputTokens: 100\n    maxOutputTokens: 100\n", "projects[1]: "),
])
def test_a_bad_file_is_refused_whole_naming_the_path(tmp_path, entry, path):
    message = refused(tmp_path, GOOD + entry)
    assert path in message, message
    assert not Project.objects.filter(name__in=["a", "good-one"]).exists()


def test_not_yaml_is_refused(tmp_path):
    assert "not valid YAML" in refused(tmp_path, "projects: [\n")


def test_a_literal_key_is_stored_encrypted_read_back_and_rotatable(tmp_path, settings):
    old_key, new_key = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.SECRETS_KEYS = [old_key]
    text = "projects:\n  - name: k\n    models: [{provider: openai, model: m, apiKey: sk-literal-123456789}]\n"
    apply(tmp_path, text)
    stored = Project.objects.get(name="k").settings["models"][0]["apiKey"]
    assert stored.startswith("fernet:") and "sk-literal" not in json.dumps(Project.objects.get(name="k").settings)
    assert secret_resolve(stored) == "sk-literal-123456789"
    assert secret_hint(stored) == "stored (…6789)"
    assert "No changes" in apply(tmp_path, text)  # the same literal again: nothing to re-encrypt
    # Rotation: a new key first; the old ciphertext still reads, and rotate_secrets re-encrypts it.
    settings.SECRETS_KEYS = [new_key, old_key]
    assert secret_resolve(stored) == "sk-literal-123456789"
    call_command("rotate_secrets", stdout=io.StringIO())
    rotated = Project.objects.get(name="k").settings["models"][0]["apiKey"]
    settings.SECRETS_KEYS = [new_key]
    assert rotated != stored and secret_resolve(rotated) == "sk-literal-123456789"


def test_a_literal_key_without_secrets_keys_is_refused(tmp_path, settings):
    settings.SECRETS_KEYS = []
    message = refused(tmp_path, "projects:\n  - name: k\n    models: [{provider: openai, model: m, apiKey: sk-x}]\n")
    assert "SECRETS_KEYS" in message and "sk-x" not in message
    assert not Project.objects.filter(name="k").exists()
