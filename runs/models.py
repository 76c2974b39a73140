"""Runs: one model-driven turn of a thread, from the request that starts it to its last event."""
from django.db import models

from core.clock import now_unique
from core.ids import new_id


def _run_id() -> str:
    return new_id("run")


# This serving process, as it names itself in `Run.owner` when it takes a run over
# (runs/recovery/takeover.py): a process that lost a run to another may not write for it.
THIS_PROCESS = new_id("proc")


class Run(models.Model):
    class Status(models.TextChoices):
        WAITING = "waiting"
        STREAMING = "streaming"
        AWAITING_INPUT = "awaiting_input"
        COMPLETED = "completed"
        CANCELLED = "cancelled"
        FAILED = "failed"

    id = models.CharField(primary_key=True, max_length=40, default=_run_id, editable=False)
    thread = models.ForeignKey("threads.Thread", on_delete=models.CASCADE, related_name="runs")
    previous_run = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.WAITING)
    model = models.CharField(max_length=200, null=True, blank=True)
    request_params = models.JSONField(default=dict, blank=True)
    error_code = models.CharField(max_length=64, null=True, blank=True)
    error_message = models.TextField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=now_unique)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Token counts summed over the run's model steps, as the provider reported them (None: it did not).
    usage = models.JSONField(null=True, blank=True)
    # The in-progress assistant message as last checkpointed by the streaming process's watcher
    # (runs/recovery/leases.py), so a process that dies does not take the text its client saw with it.
    partial_message_id = models.CharField(max_length=40, null=True, blank=True)
    partial_text = models.TextField(null=True, blank=True)
    # `provider:model` of the model that answered (the last step's), and the fallbacks taken on the
    # way ({"from", "to", "code"}: docs/models.md).
    answered_model = models.CharField(max_length=250, null=True, blank=True)
    model_fallbacks = models.JSONField(default=list, blank=True)
    # Takeover (docs/operations.md#takeover). `owner`: the process that took the run over last (None:
    # the one that started it); only that process may write for the run: the lease's fence.
    owner = models.CharField(max_length=40, null=True, blank=True)
    # What the advance loop needs of the request besides the stored thread (client tools, components,
    # model, limits), so another process can go on with the run; None: the run cannot be taken over.
    resume = models.JSONField(null=True, blank=True)
    # The run's takeovers, oldest first ({"at", "reason", "by"}): its history across processes.
    takeovers = models.JSONField(default=list, blank=True)
    takeover_count = models.IntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["thread", "created_at"], name="run_thread_idx")]

    def __str__(self) -> str:
        return f"{self.id} ({self.status})"


class RunEvent(models.Model):
    """One SSE event of a run as its stream sent it, for readers that join late or on another process
    (docs/protocol.md#resumable-runs). Written in batches by the process running the run (runs/stream/feeds.py), removed
    by the watcher once the run has been over for RUN_REPLAY_SECONDS."""

    pk = models.CompositePrimaryKey("run_id", "seq")
    # No foreign key: the rows are written in bulk every few milliseconds, and a check per row buys
    # nothing (the run exists before its first event, and the rows go before or with it).
    run_id = models.CharField(max_length=40)
    seq = models.IntegerField()
    data = models.TextField()  # the event's JSON, exactly as after `data: ` on the wire
    final = models.BooleanField(default=False)  # the run's terminal event (RUN_FINISHED / RUN_ERROR)
    created_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["created_at"], name="run_event_created_idx")]
