from django.core.management.base import BaseCommand, CommandError

from projects.models import Project
from projects.user_tokens import access_token_secret_rotate


class Command(BaseCommand):
    help = ("Replaces a project's access-token secret with a new random one: every access token issued "
            "for the project stops working at once (apps exchange their user tokens again).")

    def add_arguments(self, parser):
        parser.add_argument("project", help="Project name.")

    def handle(self, *args, project: str, **options):
        row = Project.objects.filter(name=project).first()
        if row is None:
            raise CommandError(f"No project named {project!r}.")
        access_token_secret_rotate(project=row)
        self.stdout.write(f"Rotated the access-token secret of {row.name}; its access tokens no longer verify.")
