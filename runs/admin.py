"""Admin: runs, on their own pages and above their messages in their thread's conversation."""
from django.conf import settings
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.urls import reverse

from runs.models import Run
from telemetry.models import Usage
from threads.admin import ReadOnly, ThreadAdmin
from threads.models import Thread


def run_duration(run: Run) -> str:
    """Wall time from start (or creation) to the end, e.g. "2.4 s"; "—" while it has not ended."""
    start = run.started_at or run.created_at
    if not run.finished_at or not start:
        return "—"
    seconds = (run.finished_at - start).total_seconds()
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def run_model(run: Run) -> str:
    # A run that asked for no model used the provider's default.
    if run.model:
        return run.model
    default = settings.OPENAI_MODEL if settings.MODEL_PROVIDER == "openai" else settings.MODEL_PROVIDER
    return f"{default} (default)"


def run_tokens(run: Run) -> str:
    usage = run.usage or {}
    if not usage:
        return "not reported"
    parts = [f"{usage[key]} {label}" for key, label in
             (("prompt_tokens", "prompt"), ("completion_tokens", "completion"), ("total_tokens", "total"))
             if key in usage]
    return ", ".join(parts) or str(usage)


def run_facts(run: Run, usage: Usage | None) -> dict:
    """What the thread's conversation shows above a run's messages."""
    return {
        "id": run.id, "status": run.status, "model": run_model(run),
        "provider": getattr(run, "provider", None) or (usage.provider if usage else None),
        "fallbacks": getattr(run, "fallbacks", None),
        "tokens": run_tokens(run), "reasoning_tokens": usage.reasoning_tokens if usage else None,
        "ttft": f"{usage.ttft_ms} ms" if usage and usage.ttft_ms is not None else "—",
        "duration": run_duration(run), "error_code": run.error_code, "error_message": run.error_message,
        "failed": run.status == Run.Status.FAILED, "cancelled": run.status == Run.Status.CANCELLED,
        "created_at": run.created_at, "admin_url": admin_url_of(run),
    }


def admin_url_of(run: Run) -> str:
    return reverse("admin:runs_run_change", args=[quote(run.pk)])


class RunFacts:
    """The run's model, duration and token usage as admin columns."""

    @admin.display(description="model")
    def model_used(self, obj):
        return run_model(obj)

    @admin.display(description="duration")
    def duration(self, obj):
        return run_duration(obj)

    @admin.display(description="tokens")
    def tokens(self, obj):
        return run_tokens(obj)


@admin.register(Run)
class RunAdmin(ReadOnly, RunFacts, admin.ModelAdmin):
    list_display = ("id", "thread", "status", "model_used", "duration", "tokens", "error_code", "created_at")
    list_filter = ("status",)
    search_fields = ("id", "thread__id", "error_code", "error_message")
    ordering = ("-created_at", "-id")
    readonly_fields = ("id", "thread", "previous_run", "status", "model_used", "duration", "tokens", "usage",
                       "request_params", "error_code", "error_message", "cancel_requested", "created_at",
                       "started_at", "finished_at")
    exclude = ("model",)


class ThreadWithRunsAdmin(ThreadAdmin):
    """The thread page with each run's facts above its messages.

    threads/admin.py cannot read runs itself (threads must not import runs), so the thread admin is
    registered again here with the run facts added; importing threads.admin above guarantees it is
    registered first, whatever the order in which the admin discovers the apps.
    """

    def conversation_runs(self, thread: Thread) -> dict[str, dict]:
        runs = list(Run.objects.filter(thread=thread).order_by("created_at", "id"))
        usage = {u.run_id: u for u in Usage.objects.filter(run_id__in=[r.id for r in runs])}
        return {run.id: run_facts(run, usage.get(run.id)) for run in runs}


admin.site.unregister(Thread)
admin.site.register(Thread, ThreadWithRunsAdmin)
