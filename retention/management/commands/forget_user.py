"""manage.py forget_user --project NAME --user USER_KEY: what DELETE /v1/users/{userKey} does."""
from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from core.problems import Problem
from projects.models import Project
from retention.forget import user_forget


class Command(BaseCommand):
    help = ("Remove one end user's threads, messages, uploads, runs, run events, limit counters and memories from a "
            "project, and the user's name from its usage rows; prints the counts (docs/operations.md).")

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="the project's name")
        parser.add_argument("--user", required=True,
                            help="the stored user key, as the admin shows it (token:<sub> for a token user)")

    def handle(self, *args, project: str, user: str, **options):
        found = Project.objects.filter(name=project).first()
        if found is None:
            raise CommandError(f"no project named {project!r}")
        try:
            report = user_forget(project=found, user_key=user)
        except Problem as problem:
            raise CommandError(problem.detail) from None
        self.stdout.write(json.dumps({"project": project, "userKey": user, "removed": report}, indent=2))
        if report["threadsBusy"]:
            raise CommandError(f"{report['threadsBusy']} thread(s) have a live run: run the command again once "
                               "it ended")
