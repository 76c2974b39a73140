"""First-start set-up for the serve command: a demo project, API key, built-in tools, and, only with
`--login` (bin/serve, the development entry), a demo superuser whose password it prints.

It lives in tools, not projects, because it switches on the built-in tools: tools builds on projects,
so this is the lowest app that may import both.
"""
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from projects.config import project_settings
from projects.models import ApiKey, Project
from projects.models_config import project_targets
from tools.models import ProjectTool
from tools.registry import builtin_names


class Command(BaseCommand):
    help = "Creates the demo project, an API key and a demo user on first start; prints what to use."

    def add_arguments(self, parser):
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="Base URL to print.")
        # Off by default: outside development nothing may create a login by itself, nor print a
        # password into logs (docker-compose ran this on every start). `createsuperuser` makes one.
        parser.add_argument("--login", action="store_true", help="Also create the demo login (development).")

    def handle(self, *args, url: str, login: bool = False, **options):
        project, created = Project.objects.get_or_create(name=settings.WEB_PROJECT_NAME)
        for name in builtin_names():
            ProjectTool.objects.get_or_create(project=project, name=name)
        lines = []
        if created or not project.api_keys.exists():
            _, raw = ApiKey.generate(project, "demo")
            lines.append(f"  API key (shown once): {raw}")
        user_model = get_user_model()
        if login and not user_model.objects.filter(username="demo").exists():
            password = secrets.token_urlsafe(9)
            user = user_model.objects.create_superuser("demo", "demo@example.invalid", password)
            project.members.add(user)
            lines.append(f"  Demo login (admin too): demo / {password}")
        self.stdout.write("")
        self.stdout.write(f"  Chat page:  {url}/")
        self.stdout.write(f"  Admin:      {url}/admin/")
        self.stdout.write(f"  API docs:   {url}/v1/docs")
        for line in _model_lines(project):
            self.stdout.write(line)
        for line in lines:
            self.stdout.write(line)
        if not login:
            self.stdout.write("  No login was created: `manage.py createsuperuser` makes one.")
        elif not lines:
            self.stdout.write("  (demo key and user were created on an earlier start; "
                              "`.venv/bin/python manage.py createapikey` makes another key, "
                              "`.venv/bin/python manage.py changepassword demo` a new demo password)")
        self.stdout.write("")


def _model_lines(project) -> list[str]:
    """Which model answers the page's project and through which provider, and whether voice is on."""
    targets = project_targets(project)
    first = targets[0]
    fallbacks = f" (then {', '.join(t.label for t in targets[1:])})" if len(targets) > 1 else ""
    model = f"  Model:      {first.model} via {first.provider}{fallbacks}"
    if first.provider == "offline":
        model += " (built in, no network: docs/models.md says how to configure a real one)"
    transcription = project_settings(project).transcription
    voice = (f"  Voice:      on ({transcription.model})" if transcription is not None else
             "  Voice:      off: no transcription model (docs/images-and-voice.md#voice-post-audiotranscribe says how to add one)")
    return [model, voice]
