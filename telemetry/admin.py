"""Admin: the usage page. The list of usage records, filtered by project, period, kind and outcome,
with charts of the same selection above it: tokens and runs per day per project and model, the
error rate and the time to first token's p50/p95, drawn on the server as SVG (telemetry/charts.py)."""
from __future__ import annotations

import datetime as dt

from django.contrib import admin
from django.utils import timezone

from telemetry import charts
from telemetry.models import Usage
from telemetry.usage import usage_daily

PERIODS = {"1": 1, "7": 7, "30": 30, "90": 90}
DEFAULT_DAYS = 30


class PeriodFilter(admin.SimpleListFilter):
    title = "period"
    parameter_name = "period"

    def lookups(self, request, model_admin):
        return [("1", "Today"), ("7", "Last 7 days"), ("30", "Last 30 days"), ("90", "Last 90 days")]

    def queryset(self, request, queryset):
        days = PERIODS.get(self.value() or "")
        if days is None:
            return queryset
        start = timezone.now().date() - dt.timedelta(days=days - 1)
        return queryset.filter(created_at__gte=dt.datetime.combine(start, dt.time.min, tzinfo=dt.timezone.utc))


@admin.register(Usage)
class UsageAdmin(admin.ModelAdmin):
    change_list_template = "admin/telemetry/usage/change_list.html"
    list_display = ("created_at", "project", "kind", "model", "outcome", "input_tokens", "output_tokens",
                    "ttft_ms", "duration_ms", "run_id")
    list_filter = (PeriodFilter, "project", "kind", "outcome", "model")
    search_fields = ("run_id", "thread_id", "user_key", "model")
    ordering = ("-created_at", "-id")
    date_hierarchy = None
    list_per_page = 50

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def changelist_view(self, request, extra_context=None):
        response = super().changelist_view(request, extra_context)
        context = getattr(response, "context_data", None)
        if context is None or "cl" not in context:
            return response  # a redirect (bad filter parameters)
        days = PERIODS.get(request.GET.get("period", ""), DEFAULT_DAYS)
        daily = usage_daily(context["cl"].queryset.order_by(), days=max(days, 7))
        context["usage"] = daily
        context["charts"] = [
            ("Tokens per day, by project · model",
             charts.stacked_bars("Tokens per day", daily.days, daily.tokens, label="tokens")),
            ("Runs per day, by project · model", charts.stacked_bars("Runs per day", daily.days, daily.runs, label="runs")),
            ("Error rate: runs failed, by project",
             charts.lines("Runs failed per day", daily.days, daily.error_rate, unit="%", label="failed", top=100)),
            ("Time to first token, p50 and p95",
             charts.lines("Time to first token", daily.days, daily.ttft, unit=" ms", label="ms")),
        ]
        return response
