#!/usr/bin/env python
"""The management commands of a checkout (the installed command is `tambo-server`: tambo_project/cli.py).

In a checkout that `bin/serve` started, SECRET_KEY lives in var/secret_key (SECRET_KEY_FILE): when the
environment sets no SECRET_KEY, this reads it from there the same way bin/serve does, so that
`manage.py createapikey`, `changepassword`, `shell`, ... work beside it. Only this development entry
reads the file; the settings and `tambo-server` never do.
"""
import os
import sys
from pathlib import Path


def development_secret_key() -> None:
    if os.environ.get("SECRET_KEY"):
        return
    # bin/serve runs from the checkout's root, where its relative SECRET_KEY_FILE is.
    key_file = Path(os.environ.get("SECRET_KEY_FILE", "var/secret_key"))
    key_file = key_file if key_file.is_absolute() else Path(__file__).resolve().parent / key_file
    if key_file.is_file():
        key = key_file.read_text().strip()
        if key:
            os.environ["SECRET_KEY"] = key


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tambo_project.settings")
    development_secret_key()
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.INSTALLED_APPS  # noqa: B018 - loads the settings, which check the environment
    except ImproperlyConfigured as exc:
        print(f"manage.py: error: {exc}", file=sys.stderr)
        sys.exit(2)
    execute_from_command_line(sys.argv)
