"""Threads, messages and suggestions (projects and their API keys live in projects/models.py).

Run state lives on the thread row (`run_status`, `current_run_id`, the lease): the run lock in
runs/lock.py is a row lock on that row, so one short transaction can check and move it.
"""
from django.db import models
from django.utils import timezone

from core.clock import now_unique
from core.ids import new_id
from projects.identities import STORED_MAX_LENGTH
from threads.sealing import SealedJSONField


def _thread_id() -> str:
    return new_id("thr")


def _message_id() -> str:
    return new_id("msg")


def _suggestion_id() -> str:
    return new_id("sug")


class RunStatus(models.TextChoices):
    IDLE = "idle"
    WAITING = "waiting"
    STREAMING = "streaming"


# How a run whose process stopped renewing its lease is shown and recorded (docs/protocol.md#after-a-crash).
LEASE_EXPIRED_CODE = "RUN_LEASE_EXPIRED"
LEASE_EXPIRED_ERROR = {"code": LEASE_EXPIRED_CODE, "message": "The previous run stopped responding and was abandoned."}


class Thread(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=_thread_id, editable=False)
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="threads")
    # Who owns the thread: a userKey, or a prefixed token user or login (projects/identities.py).
    user_key = models.CharField(max_length=STORED_MAX_LENGTH)
    name = models.CharField(max_length=500, null=True, blank=True)
    metadata = models.JSONField(null=True, blank=True)
    run_status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.IDLE)
    current_run_id = models.CharField(max_length=40, null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    pending_tool_call_ids = models.JSONField(default=list, blank=True)
    # The pending calls that are MCP tools' requests for input, by their (synthetic) call id: what to
    # call again with the answer (runs/mcp_inputs.py); None when there are none.
    pending_inputs = models.JSONField(null=True, blank=True)
    last_completed_run_id = models.CharField(max_length=40, null=True, blank=True)
    last_run_cancelled = models.BooleanField(null=True, blank=True)
    last_run_error = models.JSONField(null=True, blank=True)
    status_message = models.CharField(max_length=500, null=True, blank=True)
    # The AG-UI client's own `threadId` for a thread driven through POST /v1/agui (runs/agui/protocol.py), and
    # the AG-UI state it last sent, echoed back as STATE_SNAPSHOT at the start of every AG-UI run.
    external_id = models.CharField(max_length=200, null=True, blank=True)
    agui_state = SealedJSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=now_unique)
    updated_at = models.DateTimeField(default=timezone.now)
    # The thread's content is stored encrypted (threads/sealing.py): its project's `encryptContent`,
    # set when the thread is created and whenever the project's settings are written.
    sealed = models.BooleanField(default=False)

    class Meta:
        constraints = [
            # One thread per client conversation id and user: the AG-UI endpoint finds it by this.
            models.UniqueConstraint(fields=["project", "user_key", "external_id"],
                                    condition=models.Q(external_id__isnull=False), name="thread_external_id_uniq"),
        ]
        indexes = [
            # The thread list: one project's user's threads, newest first, keyset on (created_at, id).
            models.Index(fields=["project", "user_key", "-created_at", "-id"], name="thread_list_idx"),
            models.Index(fields=["run_status", "lease_expires_at"], name="thread_lease_idx"),
        ]

    def __str__(self) -> str:
        return self.name or self.id

    def seals_content(self) -> bool:
        return self.sealed

    @property
    def has_live_run(self) -> bool:
        """A run holds the lock and its lease has not expired (an expired one may be taken over)."""
        return (self.run_status != RunStatus.IDLE and self.lease_expires_at is not None
                and self.lease_expires_at > timezone.now())

    @property
    def has_dead_run(self) -> bool:
        """A run holds the lock but its lease expired: its process died or lost the database."""
        return self.run_status != RunStatus.IDLE and not self.has_live_run


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"
        SYSTEM = "system"
        TOOL = "tool"

    id = models.CharField(primary_key=True, max_length=40, default=_message_id, editable=False)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="messages")
    run_id = models.CharField(max_length=40, null=True, blank=True)
    role = models.CharField(max_length=16, choices=Role.choices)
    content = SealedJSONField(default=list)
    tool_call_id = models.CharField(max_length=200, null=True, blank=True)
    parent_message = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    is_cancelled = models.BooleanField(default=False)
    # Current state of each component rendered in this message, by component id.
    component_state = SealedJSONField(default=dict, blank=True)
    metadata = models.JSONField(null=True, blank=True)
    additional_context = SealedJSONField(null=True, blank=True)
    # The id an AG-UI client gave this message, so history it sends again is recognised (runs/agui/protocol.py).
    external_id = models.CharField(max_length=200, null=True, blank=True)
    created_at = models.DateTimeField(default=now_unique)
    # The model's reasoning before this assistant message (one string per block) and how long it
    # took; shown to the user, never sent back to the model as text (runs/reasoning.py).
    reasoning = SealedJSONField(null=True, blank=True)
    reasoning_duration_ms = models.PositiveIntegerField(null=True, blank=True)
    # The provider's own reasoning blocks (Anthropic's thinking with its signature, redacted thinking),
    # exactly as they streamed: with thinking on, Anthropic wants them back before the turn's tool
    # calls (runs/history.py). Never shown to anyone.
    reasoning_blocks = SealedJSONField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["thread", "created_at", "id"], name="message_list_idx")]

    def __str__(self) -> str:
        return f"{self.role} {self.id}"

    def seals_content(self) -> bool:
        """Its thread's `sealed`: the thread the run path holds, else read once (threads/sealing.py)."""
        thread = Message._meta.get_field("thread").get_cached_value(self, None)
        if thread is not None:
            return thread.sealed
        if not hasattr(self, "_thread_sealed"):
            self._thread_sealed = Thread.objects.filter(pk=self.thread_id).values_list("sealed", flat=True).first()
        return bool(self._thread_sealed)

    def thread_sealed_is(self, sealed: bool) -> None:
        """Tells a message built with only its thread's id whether that thread encrypts, when the
        caller knows (a batch write that must not read each thread)."""
        self._thread_sealed = sealed


class Suggestion(models.Model):
    """A suggested next user message for an assistant message (docs/protocol.md#thread-names-and-suggestions).

    A message's suggestions are replaced as a whole each time they are generated; `position` keeps
    the model's order.
    """

    id = models.CharField(primary_key=True, max_length=40, default=_suggestion_id, editable=False)
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="suggestions")
    position = models.PositiveIntegerField(default=0)
    title = models.CharField(max_length=500)
    description = models.TextField(blank=True, default="")
    detailed_suggestion = models.TextField(blank=True, default="")
    metadata = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=now_unique)

    class Meta:
        indexes = [models.Index(fields=["message", "position", "id"], name="suggestion_list_idx")]

    def __str__(self) -> str:
        return self.title
