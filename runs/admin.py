from django.contrib import admin

from runs.models import Run


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("id", "thread", "status", "model", "error_code", "created_at", "finished_at")
    list_filter = ("status",)
    search_fields = ("id", "thread__id")
    readonly_fields = ("id", "thread", "previous_run", "status", "model", "request_params", "error_code",
                       "error_message", "cancel_requested", "created_at", "started_at", "finished_at")
