"""Nothing public guards a deployment: the server refuses the development SECRET_KEY with DEBUG off,
bin/serve makes and keeps a random key of its own, and nothing creates a login outside development."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from django.core.management import call_command

from tests.support.live import ROOT, free_port

SETUP = "import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY)"


def _settings_loaded(**env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG")}
    return subprocess.run([sys.executable, "-c", SETUP], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**base, "DJANGO_SETTINGS_MODULE": "tambo_project.settings", **env})


@pytest.mark.parametrize("env", [{}, {"SECRET_KEY": "dev-only-insecure-key-change-me"},
                                 {"SECRET_KEY": "change-me-in-production"}, {"SECRET_KEY": ""}])
def test_the_settings_refuse_a_public_secret_key_with_debug_off(env):
    done = _settings_loaded(**env)

    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr and "SECRET_KEY" in done.stderr


@pytest.mark.parametrize("key", [" ", "abc", "a-real-secret-0123456789-abcdefghijklmnop", "ab" * 40,
                                 "django-insecure-" + "0123456789abcdef" * 4])
def test_the_settings_refuse_a_short_or_weak_secret_key_with_debug_off_and_say_why(key):
    done = _settings_loaded(SECRET_KEY=key)

    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr and "at least 50 characters" in done.stderr


def test_the_settings_accept_the_development_key_with_debug_on_and_a_real_key_without():
    assert _settings_loaded(DEBUG="true").returncode == 0
    real = _settings_loaded(SECRET_KEY="a-real-secret-0123456789-abcdefghijklmnopqrstuvwxyz-ABCDEF")
    assert real.returncode == 0, real.stderr


def _serve_once(tmp_path: Path) -> str:
    """Starts bin/serve on a database of its own, waits for it, stops it; answers its SECRET_KEY file."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DATABASE_URL", "DEBUG")}
    env.update(SQLITE_PATH=str(tmp_path / "db.sqlite3"), SECRET_KEY_FILE=str(tmp_path / "secret_key"),
               PORT=str(port), LOG_LEVEL="WARNING")
    server = subprocess.Popen(["bin/serve"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and server.poll() is None:
            try:
                if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                time.sleep(0.2)
        assert server.poll() is None, server.stdout.read().decode()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        out = server.communicate(timeout=30)[0].decode()
    return out


def test_bin_serve_makes_a_random_secret_key_on_first_start_and_keeps_it(tmp_path):
    first_out = _serve_once(tmp_path)
    key_file = tmp_path / "secret_key"
    first = key_file.read_text().strip()
    _serve_once(tmp_path)

    assert len(first) >= 50 and first != "dev-only-insecure-key-change-me"
    assert key_file.read_text().strip() == first
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    assert "Demo login" in first_out  # development: bin/serve asks for the login


@pytest.mark.django_db(transaction=True)
def test_bootstrap_demo_creates_no_login_unless_asked(django_user_model, capsys):
    call_command("bootstrap_demo")
    out = capsys.readouterr().out

    assert django_user_model.objects.count() == 0
    assert "password" not in out.lower() and "createsuperuser" in out

    call_command("bootstrap_demo", "--login")

    assert list(django_user_model.objects.values_list("username", flat=True)) == ["demo"]
