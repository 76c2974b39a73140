"""manage.py apply_retention: one pass of the retention job now (retention/policy.py), for cron."""
from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from retention.policy import MAX_BATCHES, retention_apply


class Command(BaseCommand):
    help = "Delete what each project's retention says is too old, in bounded batches; prints the counts."

    def add_arguments(self, parser):
        parser.add_argument("--max-batches", type=int, default=MAX_BATCHES,
                            help="batches of each kind per project in this pass (default %(default)s)")

    def handle(self, *args, max_batches: int, **options):
        report = retention_apply(max_batches=max_batches)
        self.stdout.write(json.dumps({name: dict(removed) for name, removed in report.items()}, indent=2))
