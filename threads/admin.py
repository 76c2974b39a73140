"""Admin: inspect threads with their messages and runs; create API keys (shown once)."""
import json

from django import forms
from django.contrib import admin, messages
from django.utils.html import format_html

from runs.admin import RunFacts
from runs.models import Run
from tambo_project.user_tokens import settings_errors
from threads.models import ApiKey, Message, Project, Suggestion, Thread
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


@admin.register(Thread)
class ThreadAdmin(admin.ModelAdmin):
    # `external_id`: the AG-UI client's own thread id (POST /v1/agui), empty for /v1 threads.
    list_display = ("id", "name", "project", "user_key", "external_id", "run_status", "created_at", "updated_at")
    list_filter = ("run_status", "project")
    search_fields = ("id", "user_key", "name", "external_id")
    readonly_fields = ("id", "external_id", "agui_state", "run_status", "current_run_id", "lease_expires_at",
                       "pending_tool_call_ids", "last_completed_run_id", "last_run_cancelled", "last_run_error",
                       "created_at", "updated_at")
    inlines = [MessageInline, RunInline]


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


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    extra = 0
    fields = ("prefix", "name", "revoked", "created_at", "last_used_at")
    readonly_fields = ("prefix", "created_at", "last_used_at")

    def has_add_permission(self, request, obj=None):
        return False  # keys are made through the API key admin, which shows the key once


class ProjectForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = "__all__"

    def clean(self):
        data = super().clean()
        errors = settings_errors(hs256_secret=data.get("user_token_hs256_secret") or "",
                                 public_key=data.get("user_token_public_key") or "",
                                 jwks_url=data.get("user_token_jwks_url") or "",
                                 claim=data.get("user_token_claim") or "")
        for field, message in errors.items():
            self.add_error(field, message)
        return data


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    form = ProjectForm
    list_display = ("name", "id", "created_at")
    search_fields = ("name", "id")
    filter_horizontal = ("members",)
    inlines = [ApiKeyInline]
    fieldsets = [
        (None, {"fields": ("name", "system_prompt", "max_tool_calls_per_turn", "members")}),
        ("Identity by token (userToken)", {
            "description": "How the app's own user tokens are verified before POST /oauth/token exchanges them "
                           "for access tokens. Set one of the HS256 secret, the PEM public key or the JWKS URL; "
                           "none set refuses the exchange.",
            "fields": ("user_token_hs256_secret", "user_token_public_key", "user_token_jwks_url",
                       "user_token_issuer", "user_token_audience", "user_token_claim"),
        }),
    ]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ("prefix", "name", "project", "revoked", "created_at", "last_used_at")
    list_filter = ("revoked", "project")
    search_fields = ("prefix", "name")
    fields = ("project", "name", "revoked", "prefix", "created_at", "last_used_at")
    readonly_fields = ("prefix", "created_at", "last_used_at")

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        key, raw = ApiKey.generate(obj.project, obj.name)
        obj.pk, obj.prefix, obj.hashed_key = key.pk, key.prefix, key.hashed_key
        messages.warning(request, f"The new API key is {raw} — copy it now, it is not shown again.")
