"""The project admin's "Identity by token" fieldset validates the user-token settings."""
import pytest

from projects.models import Project
from tests.support.admin import admin_url, project_change_post
from tests.support.user_tokens import HS256_SECRET, public_pem, rsa_key

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(db):
    return Project.objects.create(name="admin-tokens")


def _save(admin_client, project, **fields):
    return project_change_post(admin_client, project, **fields)


def test_the_project_page_has_the_identity_by_token_fieldset(admin_client, project):
    page = admin_client.get(admin_url(Project, "change", project.pk)).content.decode()

    assert "Identity by token (userToken)" in page
    assert "user_token_jwks_url" in page


def test_it_saves_a_valid_public_key(admin_client, project):
    pem = public_pem(rsa_key())

    response = _save(admin_client, project, user_token_public_key=pem, user_token_issuer="https://id.example")

    assert response.status_code == 302, response.content.decode()[-2000:]
    project.refresh_from_db()
    assert project.user_token_public_key.strip() == pem.strip()
    assert project.user_token_issuer == "https://id.example"


@pytest.mark.parametrize(("fields", "message"), [
    ({"user_token_hs256_secret": HS256_SECRET, "user_token_jwks_url": "https://id.example/jwks"}, "at most one"),
    ({"user_token_public_key": "-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----"}, "Not a PEM public key"),
    ({"user_token_hs256_secret": "too-short"}, "at least 32 bytes"),
    ({"user_token_hs256_secret": HS256_SECRET, "user_token_claim": " "}, ""),
])
def test_it_refuses_invalid_settings(admin_client, project, fields, message):
    response = _save(admin_client, project, **fields)

    assert response.status_code == 200  # the form again, with its errors
    assert message in response.content.decode()
    assert "errorlist" in response.content.decode()
    project.refresh_from_db()
    assert project.user_token_hs256_secret == "" and project.user_token_public_key == ""
