from django.core.management.base import BaseCommand

from projects.models import ApiKey, Project


class Command(BaseCommand):
    help = "Creates a project API key and prints it alone on the last line (it is not stored)."

    def add_arguments(self, parser):
        parser.add_argument("--project", default="demo", help="Project name (created if missing).")
        parser.add_argument("--name", default="", help="A label for the key.")

    def handle(self, *args, project: str, name: str, **options):
        project_row, created = Project.objects.get_or_create(name=project)
        if created:
            self.stderr.write(f"Created project {project_row.name} ({project_row.id}).")
        _, raw = ApiKey.generate(project_row, name)
        self.stderr.write(f"API key for project {project_row.name}:")
        self.stdout.write(raw)
