"""Nothing public guards a deployment: the server refuses the development SECRET_KEY with DEBUG off,
and nothing creates a login outside development. That bin/serve makes and keeps a random key of its own
is tested on the README quick start's clean checkout (tests/test_readme_quickstart.py)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.core.management import call_command

from tests.support.live import ROOT

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


@pytest.mark.django_db(transaction=True)
def test_bootstrap_demo_creates_no_login_unless_asked(django_user_model, capsys):
    call_command("bootstrap_demo")
    out = capsys.readouterr().out

    assert django_user_model.objects.count() == 0
    assert "password" not in out.lower() and "createsuperuser" in out

    call_command("bootstrap_demo", "--login")

    assert list(django_user_model.objects.values_list("username", flat=True)) == ["demo"]
