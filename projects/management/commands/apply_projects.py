"""`manage.py apply_projects FILE`: create or update the projects a project file names (docs/projects.md)."""
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError

from projects.project_file import ProjectFileError, project_file_apply, project_file_parse


class Command(BaseCommand):
    help = ("Creates or updates the projects named in a project file (YAML or JSON): models, keys, limits, "
            "access. Idempotent; a file with any fault is refused whole and nothing is written.")

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="The project file (YAML; JSON works too).")

    def handle(self, *args, file: Path, **options):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeError) as exc:
            raise CommandError(f"Cannot read {file}: {exc}") from None
        try:
            changes = project_file_apply(project_file_parse(text))
        except ProjectFileError as exc:
            raise CommandError(f"{file} is refused, nothing was written:\n" + "\n".join(exc.faults)) from None
        except ImproperlyConfigured as exc:  # a literal secret with no SECRETS_KEYS to encrypt it
            raise CommandError(f"{file} is refused, nothing was written: {exc}") from None
        if not changes:
            self.stdout.write("No changes: every project already matches the file.")
        for change in changes:
            self.stdout.write(str(change))
