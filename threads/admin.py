"""Admin: inspect threads with their messages and suggestions. Read-only: messages are written by
the API, and the admin is where their conversation is read.

A thread's page reads as the conversation (threads/conversation.py, drawn by
templates/admin/threads/thread/change_form.html); the facts of each run (model, tokens, times) are
added by runs/admin.py, because runs build on threads and not the other way round.
"""
import base64
import binascii
import json

from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.http import Http404, HttpResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.http import content_disposition_header
from django.utils.safestring import mark_safe

from threads.conversation import content_without_blobs, conversation_build, message_preview, resource_item
from threads.models import Message, Suggestion, Thread
from threads.presenters import message_content
from threads.search import Scan, message_search, thread_search


def pretty_json(value) -> str:
    return format_html("<pre style='white-space:pre-wrap;margin:0'>{}</pre>",
                       json.dumps(value, indent=2, ensure_ascii=False))


class ReadOnly:
    """Inspection pages: viewable and deletable, never added or edited by hand."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


def search_notice(request, scan: Scan) -> None:
    """Tells staff what a search by words could not see: encrypted messages older than those read
    (threads/search.py), and those no key decrypts."""
    if scan.limited and not scan.scanned:
        messages.info(request, "Encrypted content is not searched by its words (ADMIN_SEARCH_ENCRYPTED_MESSAGES is 0).")
    elif scan.limited:
        messages.info(request, f"Encrypted content: the words of the {scan.scanned:,} most recent encrypted "
                               "messages of this list were searched, not older ones. Filter the list (by "
                               "project) to search further back; ADMIN_SEARCH_ENCRYPTED_MESSAGES sets how many.")
    if scan.unreadable:
        messages.warning(request, f"{scan.unreadable:,} encrypted messages could not be decrypted with "
                                  "SECRETS_KEYS and were not searched.")


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
    # external_id (the AG-UI client's thread id) is on the thread's page: the list fits 1280 px.
    list_display = ("id", "name", "project", "user_key", "run_status", "updated_at")
    list_filter = ("run_status", "project")
    # Also the words of the thread's messages, encrypted ones too (threads/search.py, get_search_results).
    search_fields = ("id", "user_key", "name", "external_id")
    search_help_text = "Ids, user key, name, or words of the thread's messages."
    readonly_fields = ("id", "external_id", "sealed", "agui_state", "run_status", "current_run_id", "lease_expires_at",
                       "pending_tool_call_ids", "pending_inputs", "last_completed_run_id", "last_run_cancelled",
                       "last_run_error", "created_at", "updated_at")
    inlines = [MessageInline]

    def conversation_runs(self, thread: Thread) -> dict[str, dict]:
        """Run id → the facts shown above that run's messages (runs/admin.py fills them in)."""
        return {}

    def get_search_results(self, request, queryset, search_term):
        found, scan = thread_search(queryset, search_term)
        search_notice(request, scan)
        return found, False

    def change_view(self, request, object_id, form_url="", extra_context=None):
        thread = self.get_object(request, admin.utils.unquote(object_id))
        if thread is not None:
            messages = thread.messages.order_by("created_at", "id")
            extra_context = {**(extra_context or {}), "page_url": f"/?thread={thread.id}",
                             "conversation": conversation_build(messages, self.conversation_runs(thread),
                                                                part_url=part_url)}
        return super().change_view(request, object_id, form_url, extra_context)


def part_url(message_id: str, index: int) -> str:
    """The staff-only address of a message's stored file (MessageAdmin `part_view`)."""
    return reverse("admin:threads_message_part", args=[quote(message_id), index])


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
    # The cancelled flag and the thread are on the message's page: the list fits 1280 px.
    list_display = ("id", "role", "preview", "created_at")
    # The project filter also bounds the search of encrypted messages to that project's (threads/search.py).
    list_filter = ("role", "is_cancelled", "thread__project")
    # The words of a message find it, in SQL for a plaintext project, decrypted in the request for an
    # encrypting one (the most recent ADMIN_SEARCH_ENCRYPTED_MESSAGES): get_search_results.
    search_fields = ("id", "thread__id", "thread__user_key", "tool_call_id", "external_id", "content")
    search_help_text = "Ids, the thread's user key, or words of the message."
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

    def get_search_results(self, request, queryset, search_term):
        found, scan = message_search(queryset, search_term)
        search_notice(request, scan)
        return found, False

    @admin.display(description="content")
    def readable_content(self, obj):
        # Components with their current state; a file's blob as its size, the file itself above it.
        files = [resource_item(block, index, lambda i: part_url(obj.id, i))
                 for index, block in enumerate(obj.content or []) if block.get("type") == "resource"]
        links = mark_safe("".join(  # noqa: S308 - each piece is format_html's, escaped
            format_html('<a href="{}"><img class="tambo-thumb" src="{}" alt="{}" loading="lazy" '
                        'style="max-width:160px;max-height:120px"></a> ', f["url"], f["url"], f["name"])
            if f["is_image"] else format_html('<a class="tambo-file" href="{}">{}</a> ', f["url"], f["name"])
            for f in files if f["url"]))
        return links + pretty_json(content_without_blobs(message_content(obj)))

    def get_urls(self):
        part = path("<path:object_id>/part/<int:index>/", self.admin_site.admin_view(self.part_view),
                    name="threads_message_part")
        return [part, *super().get_urls()]

    def part_view(self, request, object_id: str, index: int) -> HttpResponse:
        """A message's stored file (an image, a PDF, a text file) as its bytes, for staff who may
        view messages: the admin's pages link to it and never inline the blob."""
        message = self.get_object(request, admin.utils.unquote(object_id))
        if message is None or not self.has_view_permission(request, message):
            raise Http404("No such message.")
        blocks = message.content or []
        block = blocks[index] if 0 <= index < len(blocks) else {}
        resource = block.get("resource") if block.get("type") == "resource" else None
        if not isinstance(resource, dict) or not isinstance(resource.get("blob"), str):
            raise Http404("That part holds no stored file.")
        try:
            data = base64.b64decode(resource["blob"], validate=True)
        except (binascii.Error, ValueError):
            raise Http404("That part's file cannot be read.") from None
        mime = str(resource.get("mimeType") or "application/octet-stream")
        response = HttpResponse(data, content_type=mime)
        # Only the types the API accepts are stored (docs/images-and-voice.md); still, the browser must
        # take them for what they say they are, run nothing, and download anything but images and PDFs.
        response["X-Content-Type-Options"] = "nosniff"
        response["Content-Security-Policy"] = "sandbox; default-src 'none'; img-src 'self'; style-src 'unsafe-inline'"
        response["Cache-Control"] = "private, max-age=3600"
        inline = mime.startswith("image/") or mime == "application/pdf"
        response["Content-Disposition"] = content_disposition_header(not inline, str(resource.get("name") or f"part-{index}"))
        return response

    @admin.display(description="component state")
    def readable_component_state(self, obj):
        return pretty_json(obj.component_state)
