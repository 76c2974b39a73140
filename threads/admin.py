"""Admin: inspect threads with their messages and suggestions. Read-only: messages are written by
the API, and the admin is where their conversation is read.

A thread's page reads as the conversation (threads/conversation.py, drawn by
templates/admin/threads/thread/change_form.html); the facts of each run (model, tokens, times) are
added by runs/admin.py, because runs build on threads and not the other way round.
"""
import json

from django.contrib import admin
from django.utils.html import format_html

from threads.conversation import conversation_build, message_preview
from threads.models import Message, Suggestion, Thread
from threads.presenters import message_content


def pretty_json(value) -> str:
    return format_html("<pre style='white-space:pre-wrap;margin:0'>{}</pre>",
                       json.dumps(value, indent=2, ensure_ascii=False))


class ReadOnly:
    """Inspection pages: viewable and deletable, never added or edited by hand."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class MessageInline(ReadOnly, admin.TabularInline):
    """The thread's messages as a compact index below the conversation (links to each message)."""

    model = Message
    extra = 0
    can_delete = False
    ordering = ("created_at", "id")
    fields = ("id", "role", "preview", "external_id", "is_cancelled", "created_at")
    readonly_fields = fields
    show_change_link = True
    classes = ("collapse",)

    @admin.display(description="text")
    def preview(self, obj):
        return message_preview(obj)


@admin.register(Thread)
class ThreadAdmin(ReadOnly, admin.ModelAdmin):
    # `external_id`: the AG-UI client's own thread id (POST /v1/agui), empty for /v1 threads.
    list_display = ("id", "name", "project", "user_key", "external_id", "run_status", "updated_at")
    list_filter = ("run_status", "project")
    search_fields = ("id", "user_key", "name", "external_id")
    readonly_fields = ("id", "external_id", "agui_state", "run_status", "current_run_id", "lease_expires_at",
                       "pending_tool_call_ids", "last_completed_run_id", "last_run_cancelled", "last_run_error",
                       "created_at", "updated_at")
    inlines = [MessageInline]

    def conversation_runs(self, thread: Thread) -> dict[str, dict]:
        """Run id → the facts shown above that run's messages (runs/admin.py fills them in)."""
        return {}

    def change_view(self, request, object_id, form_url="", extra_context=None):
        thread = self.get_object(request, admin.utils.unquote(object_id))
        if thread is not None:
            messages = thread.messages.order_by("created_at", "id")
            extra_context = {**(extra_context or {}), "page_url": f"/?thread={thread.id}",
                             "conversation": conversation_build(messages, self.conversation_runs(thread))}
        return super().change_view(request, object_id, form_url, extra_context)


class SuggestionInline(ReadOnly, admin.TabularInline):
    """A message's suggested next messages, in the model's order; made only by the API."""

    model = Suggestion
    extra = 0
    can_delete = False
    ordering = ("position", "id")
    fields = ("id", "position", "title", "description", "detailed_suggestion", "created_at")
    readonly_fields = fields


@admin.register(Message)
class MessageAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("id", "thread", "role", "preview", "is_cancelled", "created_at")
    list_filter = ("role", "is_cancelled")
    # `content` searches the message's JSON as text, so the words of a message find it.
    search_fields = ("id", "thread__id", "tool_call_id", "external_id", "content")
    ordering = ("-created_at", "-id")
    readonly_fields = ("id", "thread", "run_id", "role", "readable_content", "readable_component_state",
                       "tool_call_id", "external_id", "parent_message", "is_cancelled", "metadata",
                       "additional_context", "created_at")
    # reasoning_blocks: the provider's signed thinking, opaque and kept only to be sent back to it.
    exclude = ("content", "component_state", "reasoning_blocks")
    inlines = [SuggestionInline]

    @admin.display(description="text")
    def preview(self, obj):
        return message_preview(obj, limit=80)

    @admin.display(description="content")
    def readable_content(self, obj):
        return pretty_json(message_content(obj))  # components with their current state

    @admin.display(description="component state")
    def readable_component_state(self, obj):
        return pretty_json(obj.component_state)
