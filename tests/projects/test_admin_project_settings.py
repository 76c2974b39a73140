"""The project admin edits the settings the project file sets: validated by the same schema, and API
keys written but never shown back."""
import json

import pytest
from cryptography.fernet import Fernet

from projects.admin_settings import STORED_MARK
from projects.config import project_settings
from projects.models import Project
from projects.secrets import secret_resolve
from tests.support.admin import admin_url, project_change_post

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(db):
    return Project.objects.create(name="admin-models")


def _save(admin_client, project, document):
    return project_change_post(admin_client, project,
                               settings_document=document if isinstance(document, str) else json.dumps(document))


def test_a_typed_key_is_stored_encrypted_and_never_shown_back(admin_client, project, settings):
    settings.SECRETS_KEYS = [Fernet.generate_key().decode()]
    document = {"models": [{"provider": "anthropic", "model": "claude-x", "apiKey": "sk-ant-typed-secret-42"}],
                "maxOutputTokens": 100}
    response = _save(admin_client, project, document)
    assert response.status_code == 302, response.content.decode()[-2000:]
    project.refresh_from_db()
    stored = project.settings["models"][0]["apiKey"]
    assert stored.startswith("fernet:") and secret_resolve(stored) == "sk-ant-typed-secret-42"
    assert project_settings(project).max_output_tokens == 100 and project.settings_version == 1
    page = admin_client.get(admin_url(Project, "change", project.pk)).content.decode()
    assert "sk-ant-typed-secret-42" not in page and stored not in page and STORED_MARK in page
    # Saved again as shown (the mark left in place): the stored key is kept.
    shown = json.loads(json.dumps(project.settings))
    shown["models"][0]["apiKey"] = STORED_MARK
    shown["maxOutputTokens"] = 200
    assert _save(admin_client, project, shown).status_code == 302
    project.refresh_from_db()
    assert project.settings["models"][0]["apiKey"] == stored and project.settings["maxOutputTokens"] == 200


def test_a_bad_document_is_refused_with_the_path(admin_client, project):
    response = _save(admin_client, project, {"models": [{"provider": "vertex", "model": "m"}]})
    assert response.status_code == 200 and "models[0].provider" in response.content.decode()
    project.refresh_from_db()
    assert project.settings == {}


def test_a_blank_document_changes_nothing(admin_client, project):
    project.settings = {"maxOutputTokens": 5}
    project.save()
    assert _save(admin_client, project, "").status_code == 302
    project.refresh_from_db()
    assert project.settings == {"maxOutputTokens": 5}
