"""Admin: inspect threads with their messages and suggestions.

A thread's runs are shown on its page too: runs/admin.py adds that inline, because runs build on threads
and not the other way round.
"""
import json

from django.contrib import admin
from django.utils.html import format_html

from threads.models import Message, Suggestion, Thread
from threads.presenters import message_content


def pretty_json(value) -> str:
    return format_html("<pre style='white-space:pre-wrap;margin:0'>{}</pre>",
                       json.dumps(value, indent=2, ensure_ascii=False))


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    can_delete = False
    ordering = ("created_at", "id")
    fields = ("id", "role", "readable_content", "tool_call_id", "external_id", "is_cancelled", "created_at")
    readonly_fields = fields
    show_change_link = True

    @admin.display(description="content")
    def readable_content(self, obj):
        return pretty_json(message_content(obj))  # components with their current state

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Thread)
class ThreadAdmin(admin.ModelAdmin):
    # `external_id`: the AG-UI client's own thread id (POST /v1/agui), empty for /v1 threads.
    list_display = ("id", "name", "project", "user_key", "external_id", "run_status", "created_at", "updated_at")
    list_filter = ("run_status", "project")
    search_fields = ("id", "user_key", "name", "external_id")
    readonly_fields = ("id", "external_id", "agui_state", "run_status", "current_run_id", "lease_expires_at",
                       "pending_tool_call_ids", "last_completed_run_id", "last_run_cancelled", "last_run_error",
                       "created_at", "updated_at")
    inlines = [MessageInline]


class SuggestionInline(admin.TabularInline):
    """A message's suggested next messages, in the model's order; made only by the API."""

    model = Suggestion
    extra = 0
    can_delete = False
    ordering = ("position", "id")
    fields = ("id", "position", "title", "description", "detailed_suggestion", "created_at")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ("id", "thread", "role", "is_cancelled", "created_at")
    list_filter = ("role", "is_cancelled")
    # `content` searches the message's JSON as text, so the words of a message find it.
    search_fields = ("id", "thread__id", "tool_call_id", "external_id", "content")
    ordering = ("-created_at", "-id")
    readonly_fields = ("id", "thread", "run_id", "role", "readable_content", "readable_component_state",
                       "tool_call_id", "external_id", "parent_message", "is_cancelled", "metadata",
                       "additional_context", "created_at")
    exclude = ("content", "component_state")
    inlines = [SuggestionInline]

    @admin.display(description="content")
    def readable_content(self, obj):
        return pretty_json(message_content(obj))  # components with their current state

    @admin.display(description="component state")
    def readable_component_state(self, obj):
        return pretty_json(obj.component_state)
