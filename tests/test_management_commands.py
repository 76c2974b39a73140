"""The commands a newcomer runs (docs/deployment.md, README): `manage.py` beside `bin/serve`, and the
installed `tambo-server`, refuse a missing SECRET_KEY in one line; `check --deploy` is clean on the
production settings."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.checks import run_checks
from django.test import override_settings

ROOT = Path(__file__).resolve().parents[1]
# The environment of the test run configures nothing for these commands.
UNSET = ("SECRET_KEY", "SECRET_KEY_FILE", "DEBUG", "DATABASE_URL", "DATABASE_LISTEN_URL", "DJANGO_SETTINGS_MODULE",
         "SECURE_COOKIES", "SECURE_HSTS_SECONDS")


def run(args: list[str], cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in UNSET}
    return subprocess.run(args, cwd=cwd, env={**base, **env}, capture_output=True, text=True, timeout=120)


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    return run([sys.executable, str(ROOT / "manage.py"), *args], **env)


# Keys as strong as the settings ask (50 characters or more, not all alike: tambo_project/settings.py).
FILE_KEY = "file-key-" + "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
ENV_KEY = "env-key-" + "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba98"


def test_manage_py_reads_the_key_bin_serve_keeps(tmp_path):
    key_file = tmp_path / "secret_key"
    key_file.write_text(FILE_KEY + "\n")  # as bin/serve writes it: one line
    result = manage("shell", "-c", "from django.conf import settings; print(settings.SECRET_KEY)",
                    SECRET_KEY_FILE=str(key_file), SQLITE_PATH=str(tmp_path / "db.sqlite3"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == FILE_KEY


def test_manage_py_prefers_the_environments_key(tmp_path):
    key_file = tmp_path / "secret_key"
    key_file.write_text(FILE_KEY)
    result = manage("shell", "-c", "from django.conf import settings; print(settings.SECRET_KEY)",
                    SECRET_KEY=ENV_KEY, SECRET_KEY_FILE=str(key_file), SQLITE_PATH=str(tmp_path / "db.sqlite3"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == ENV_KEY


def test_manage_py_without_any_key_says_so_in_one_line_and_exits_2(tmp_path):
    result = manage("check", SECRET_KEY_FILE=str(tmp_path / "none"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "SECRET_KEY" in result.stderr


def test_tambo_server_serve_without_a_key_says_so_in_one_line_and_exits_2(tmp_path):
    tambo_server = Path(sys.executable).parent / "tambo-server"
    result = run([str(tambo_server), "serve", "--port", "1"], cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "SECRET_KEY" in result.stderr


def test_check_deploy_is_clean_on_the_production_settings(tmp_path):
    # docs/deployment.md's settings for a server behind HTTPS.
    import secrets

    result = manage("check", "--deploy", "--fail-level", "WARNING", SECRET_KEY=secrets.token_urlsafe(50), SECURE_COOKIES="true",
                    SECURE_HSTS_SECONDS="31536000", SQLITE_PATH=str(tmp_path / "db.sqlite3"))
    assert result.returncode == 0, result.stderr + result.stdout
    assert "no issues" in result.stdout
    assert "W001" not in result.stderr + result.stdout


def test_a_middleware_list_without_the_security_middleware_still_warns():
    from django.conf import settings

    without = [m for m in settings.MIDDLEWARE if not m.endswith((".SecurityMiddleware", ".CsrfViewMiddleware"))]
    with override_settings(MIDDLEWARE=without):
        ids = {message.id for message in run_checks(include_deployment_checks=True)}
    assert {"tambo.W001", "tambo.W003"} <= ids and "tambo.W002" not in ids
    assert "tambo.W001" not in {message.id for message in run_checks(include_deployment_checks=True)}


@pytest.mark.django_db
def test_the_start_banner_names_the_model_its_provider_and_whether_voice_is_on(capsys, settings):
    from django.core.management import call_command

    from projects.config import ProjectSettings, TranscriptionSpec, project_settings_save
    from projects.models import Project

    call_command("bootstrap_demo")
    out = capsys.readouterr().out
    assert "Model:      offline via offline" in out
    assert "Voice:      off: no transcription model" in out

    project_settings_save(Project.objects.get(name=settings.WEB_PROJECT_NAME),
                          ProjectSettings(transcription=TranscriptionSpec(model="whisper-1", api_key="sk-x")))
    call_command("bootstrap_demo")
    assert "Voice:      on (whisper-1)" in capsys.readouterr().out
