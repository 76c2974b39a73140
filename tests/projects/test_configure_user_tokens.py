"""`python manage.py configure_user_tokens`: sets how a project verifies its apps' user tokens."""
import os
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from projects.models import Project
from tests.support.live import ROOT, database_url
from tests.support.user_tokens import HS256_SECRET, exchange, public_pem, rsa_key, sign_hs256, sign_rs256

pytestmark = pytest.mark.django_db(transaction=True)


def _configure(*args: str) -> str:
    out = StringIO()
    call_command("configure_user_tokens", *args, stdout=out)
    return out.getvalue()


def test_it_configures_hs256_and_the_exchange_then_works(live_server_url, api_key, project):
    env = {**os.environ, "DATABASE_URL": database_url()}
    done = subprocess.run([sys.executable, "manage.py", "configure_user_tokens", "--project", project.name,
                           "--hs256-secret", HS256_SECRET, "--issuer", "https://id.example", "--audience", "my-app"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert "HS256" in done.stdout
    token = sign_hs256(iss="https://id.example", aud="my-app")
    assert exchange(live_server_url, api_key, token).status_code == 200
    assert exchange(live_server_url, api_key, sign_hs256()).status_code == 400  # no iss/aud


def test_it_configures_a_public_key_file_and_clears_the_other_sources(live_server_url, api_key, project, tmp_path):
    _configure("--project", project.name, "--hs256-secret", HS256_SECRET)
    key = rsa_key()
    pem_file = tmp_path / "key.pem"
    pem_file.write_text(public_pem(key))

    _configure("--project", project.name, "--public-key-file", str(pem_file), "--user-claim", "uid")

    project.refresh_from_db()
    assert project.user_token_hs256_secret == ""
    assert project.user_token_public_key == public_pem(key)
    assert project.user_token_claim == "uid"
    assert exchange(live_server_url, api_key, sign_rs256(key, uid="frank")).status_code == 200


def test_it_configures_a_jwks_url(project):
    _configure("--project", project.name, "--jwks-url", "https://id.example/.well-known/jwks.json")

    project.refresh_from_db()
    assert project.user_token_jwks_url == "https://id.example/.well-known/jwks.json"
    assert project.user_token_claim == "sub"


@pytest.mark.parametrize(("args", "message"), [
    (["--hs256-secret", "short"], "at least 32 bytes"),
    (["--jwks-url", "file:///etc/passwd"], "http"),
    (["--hs256-secret", HS256_SECRET, "--user-claim", " "], "claim"),
])
def test_it_refuses_bad_settings_and_changes_nothing(project, args, message):
    with pytest.raises(CommandError, match=message):
        _configure("--project", project.name, *args)

    project.refresh_from_db()
    assert project.user_token_hs256_secret == "" and project.user_token_jwks_url == ""


def test_it_refuses_a_file_that_is_not_a_pem_public_key(project, tmp_path):
    bad = tmp_path / "private.pem"
    bad.write_text("-----BEGIN PRIVATE KEY-----\nnot really\n-----END PRIVATE KEY-----\n")

    with pytest.raises(CommandError, match="PEM public key"):
        _configure("--project", project.name, "--public-key-file", str(bad))


def test_it_takes_exactly_one_key_source(project):
    with pytest.raises(CommandError):
        _configure("--project", project.name, "--hs256-secret", HS256_SECRET, "--jwks-url", "https://x.example/j")
    with pytest.raises(CommandError):
        _configure("--project", project.name)


def test_it_refuses_an_unknown_project():
    with pytest.raises(CommandError, match="No project"):
        _configure("--project", "nope", "--hs256-secret", HS256_SECRET)
    assert not Project.objects.filter(name="nope").exists()
