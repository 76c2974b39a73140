"""The counters behind run rates and token budgets (projects/limits.py writes and reads them)."""
from django.db import models

from projects.identities import STORED_MAX_LENGTH


class LimitCounter(models.Model):
    """One window's count for a project (`user_key` "") or one of its end users: runs in a minute
    (`kind` "runs") or tokens in a UTC day ("tokens"). Old windows are pruned by the watcher."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    # The stored user key (projects/identities.py), or "" for the project's own count.
    user_key = models.CharField(max_length=STORED_MAX_LENGTH, blank=True)
    kind = models.CharField(max_length=8)
    window_start = models.DateTimeField()
    count = models.BigIntegerField(default=0)

    class Meta:
        app_label = "projects"
        db_table = "projects_limit_counter"
        constraints = [models.UniqueConstraint(fields=["project", "user_key", "kind", "window_start"],
                                               name="limit_counter_window_uniq")]
        indexes = [models.Index(fields=["window_start"], name="limit_counter_window_idx")]

    def __str__(self) -> str:
        return f"{self.project_id} {self.user_key or '(project)'} {self.kind} {self.window_start}: {self.count}"
