"""Admin: projects with their user-token settings, and API keys (a new key is shown once)."""
from django import forms
from django.contrib import admin, messages

from projects.config import project_settings_saved
from projects.admin_settings import SettingsField, masked, settings_from_form
from projects.models import ApiKey, Project
from projects.user_tokens import user_token_settings_errors


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    extra = 0
    fields = ("prefix", "name", "revoked", "created_at", "last_used_at")
    readonly_fields = ("prefix", "created_at", "last_used_at")

    def has_add_permission(self, request, obj=None):
        return False  # keys are made through the API key admin, which shows the key once


class ProjectForm(forms.ModelForm):
    settings_document = SettingsField()

    class Meta:
        model = Project
        exclude = ["settings"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["settings_document"].initial = masked(self.instance.settings)

    def clean_settings_document(self):
        return settings_from_form(self.cleaned_data.get("settings_document") or "", self.instance.settings)

    def clean(self):
        data = super().clean()
        errors = user_token_settings_errors(hs256_secret=data.get("user_token_hs256_secret") or "",
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

    def save_model(self, request, obj, form, change):
        written = _save_settings(obj, form)
        super().save_model(request, obj, form, change)
        if written:
            project_settings_saved(obj)
    fieldsets = [
        (None, {"fields": ("name", "system_prompt", "max_tool_calls_per_turn", "members")}),
        ("Models, limits and access", {"fields": ("settings_document",)}),
        ("Identity by token (userToken)", {
            "description": "How the app's own user tokens are verified before POST /oauth/token exchanges them "
                           "for access tokens. Set one of the HS256 secret, the PEM public key or the JWKS URL; "
                           "none set refuses the exchange.",
            "fields": ("user_token_hs256_secret", "user_token_public_key", "user_token_jwks_url",
                       "user_token_issuer", "user_token_audience", "user_token_claim"),
        }),
    ]


def _save_settings(obj: Project, form) -> bool:
    document = form.cleaned_data.get("settings_document")
    if document is not None and document != obj.settings:
        obj.settings = document
        # Every process re-parses a project's settings once per version (projects/config.py).
        obj.settings_version = (obj.settings_version or 0) + 1
        return True
    return False


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
