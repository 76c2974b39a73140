"""`manage.py rotate_secrets`: re-encrypt every stored project secret with the first SECRETS_KEYS key."""
from django.core.management.base import BaseCommand
from django.db import transaction

from projects.config import ProjectSettings, project_settings_save
from projects.models import Project
from projects.secrets import secret_rotate


class Command(BaseCommand):
    help = ("Re-encrypts the secrets stored in project settings with the first key of SECRETS_KEYS, so an older "
            "key can then be removed.")

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
