"""`manage.py rotate_secrets`: re-encrypt everything stored with SECRETS_KEYS with its first key."""
from django.core.management.base import BaseCommand
from django.db import transaction

from projects.config import ProjectSettings, project_settings_save
from projects.models import Project
from projects.secrets import rotation_steps, secret_rotate


class Command(BaseCommand):
    help = ("Re-encrypts with the first key of SECRETS_KEYS the secrets stored in project settings, the MCP "
            "vault's tokens and clients, and the content of projects with encryptContent (which also encrypts "
            "what such a project stored before the setting was on), so an older key can then be removed.")

    def add_arguments(self, parser):
        parser.add_argument("--batch", type=int, default=500,
                            help="Rows per transaction for the vault and the content (default 500).")

    def handle(self, *args, **options):
        count = 0
        with transaction.atomic():
            for project in Project.objects.select_for_update().exclude(settings={}):
                document = dict(project.settings)
                specs = list(document.get("models") or [])
                if isinstance(document.get("transcription"), dict):
                    specs.append(document["transcription"])
                rotated = False
                for spec in specs:
                    new = secret_rotate(spec.get("apiKey"))
                    if new != spec.get("apiKey"):
                        spec["apiKey"], rotated = new, True
                    headers = spec.get("headers") if isinstance(spec.get("headers"), dict) else {}
                    for name, value in headers.items():  # an agent's headers (docs/models.md#agents)
                        if secret_rotate(value) != value:
                            headers[name], rotated = secret_rotate(value), True
                if rotated:
                    project_settings_save(project, ProjectSettings.model_validate(document))
                    count += 1
        self.stdout.write(f"Re-encrypted the stored secrets of {count} project(s).")
        # Each registered step in transactions of --batch rows: a table of any size, no long lock.
        for label, step in rotation_steps:
            counts = step(max(1, options["batch"]))
            detail = ", ".join(f"{name} {n}" for name, n in counts.items())
            self.stdout.write(f"Re-encrypted {label}: {sum(counts.values())} row(s) ({detail}).")
