"""The configuration package as an app, only so that its system checks are registered (checks.py)."""
from django.apps import AppConfig


class ConfigurationConfig(AppConfig):
    name = "tambo_project"
    label = "tambo_project"

    def ready(self) -> None:
        from tambo_project import checks  # noqa: F401 - registers the checks
