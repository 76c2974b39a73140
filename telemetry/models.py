"""The usage record (docs/abuse-and-limits.md): one row per run and per short model call, what budgets count
and what the admin's usage page draws."""
from django.db import models
from django.utils import timezone

from projects.identities import STORED_MAX_LENGTH


class Usage(models.Model):
    class Kind(models.TextChoices):
        RUN = "run"
        NAME = "name"  # a thread name
        SUGGESTIONS = "suggestions"
        GATEWAY = "gateway"  # a chat completion
        MEMORY = "memory"  # a memory extraction after a run (memory/extraction.py)
        TRANSCRIPTION = "transcription"  # a recording transcribed (POST /audio/transcribe)

    class Outcome(models.TextChoices):
        COMPLETED = "completed"
        AWAITING_INPUT = "awaiting_input"  # paused on client tools: the run ended, its turn did not
        CANCELLED = "cancelled"
        FAILED = "failed"

    id = models.BigAutoField(primary_key=True)
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="usage_records")
    # The stored key (projects/identities.py): a prefix in front of the longest user the exchange accepts.
    user_key = models.CharField(max_length=STORED_MAX_LENGTH, blank=True, default="")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.RUN)
    # No foreign keys to the run or thread: usage outlives a deleted thread (what was spent was spent),
    # and telemetry sits below runs in the layers.
    run_id = models.CharField(max_length=40, null=True, blank=True)
    thread_id = models.CharField(max_length=40, null=True, blank=True)
    model = models.CharField(max_length=200, blank=True, default="")
    provider = models.CharField(max_length=40, blank=True, default="")
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    reasoning_tokens = models.PositiveBigIntegerField(default=0)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    ttft_ms = models.PositiveIntegerField(null=True, blank=True, verbose_name="time to first token (ms)")
    outcome = models.CharField(max_length=20, choices=Outcome.choices)
    error_code = models.CharField(max_length=64, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "usage"
        indexes = [models.Index(fields=["project", "created_at"], name="usage_project_idx"),
                   models.Index(fields=["project", "user_key", "created_at"], name="usage_user_idx"),
                   models.Index(fields=["run_id"], name="usage_run_idx")]

    def __str__(self) -> str:
        return f"{self.kind} {self.run_id or self.id} ({self.outcome})"

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens
