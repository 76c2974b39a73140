"""Admin: runs, on their own pages and on their thread's page."""
from django.conf import settings
from django.contrib import admin

from runs.models import Run
from threads.admin import ThreadAdmin
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


class RunFacts:
    """The run's model, duration and token usage as admin columns (the run page and the thread's inline)."""

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
class RunAdmin(RunFacts, admin.ModelAdmin):
    list_display = ("id", "thread", "status", "model_used", "duration", "tokens", "error_code", "created_at")
    list_filter = ("status",)
    search_fields = ("id", "thread__id", "error_code", "error_message")
    ordering = ("-created_at", "-id")
    readonly_fields = ("id", "thread", "previous_run", "status", "model_used", "duration", "tokens", "usage",
                       "request_params", "error_code", "error_message", "cancel_requested", "created_at",
                       "started_at", "finished_at")
    exclude = ("model",)


class RunInline(RunFacts, admin.TabularInline):
    model = Run
    fk_name = "thread"
    extra = 0
    can_delete = False
    ordering = ("created_at", "id")  # ids are random: time is the only meaningful order
    fields = ("id", "status", "previous_run", "model_used", "duration", "tokens", "error_code", "error_message",
              "cancel_requested", "started_at", "finished_at")
    readonly_fields = fields
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


class ThreadWithRunsAdmin(ThreadAdmin):
    """The thread page with its runs below its messages.

    threads/admin.py cannot show runs itself (threads must not import runs), so the thread admin is
    registered again here with the run inline added; importing threads.admin above guarantees it is
    registered first, whatever the order in which the admin discovers the apps.
    """

    inlines = [*ThreadAdmin.inlines, RunInline]


admin.site.unregister(Thread)
admin.site.register(Thread, ThreadWithRunsAdmin)
