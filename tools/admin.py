from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from projects.secrets import secret_hint, secret_store
from tools.models import McpServer, McpToken, ProjectTool


@admin.register(McpServer)
class McpServerAdmin(admin.ModelAdmin):
    list_display = ("name", "project", "transport", "auth", "enabled")
    list_filter = ("transport", "auth", "enabled", "project")
    search_fields = ("name",)
    readonly_fields = ("authorisation",)
    fields = ("project", "name", "transport", "command", "args", "env", "url", "headers", "enabled", "auth",
              "oauth_scopes", "oauth_client_id", "oauth_client_secret", "authorisation")

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        secret = form.base_fields.get("oauth_client_secret")
        if secret is not None and obj is not None and obj.oauth_client_secret:
            # The stored secret is never shown back: a blank field keeps it.
            secret.help_text = f"Now: {secret_hint(obj.oauth_client_secret)}. Leave blank to keep it."
            secret.required = False
        return form

    def save_model(self, request, obj, form, change):
        typed = form.cleaned_data.get("oauth_client_secret", "")
        if change and not typed:
            obj.oauth_client_secret = McpServer.objects.values_list("oauth_client_secret", flat=True).get(pk=obj.pk)
        else:
            obj.oauth_client_secret = secret_store(typed) or ""
        super().save_model(request, obj, form, change)

    def render_change_form(self, request, context, *args, **kwargs):
        form = context.get("adminform")
        if form is not None and "oauth_client_secret" in form.form.initial:
            form.form.initial["oauth_client_secret"] = ""  # never rendered back into the page
        return super().render_change_form(request, context, *args, **kwargs)

    @admin.display(description="OAuth authorisation")
    def authorisation(self, obj: McpServer) -> str:
        if obj.pk is None or obj.auth == McpServer.Auth.NONE:
            return "—"
        grants = reverse("admin:tools_mcptoken_changelist") + f"?server__id__exact={obj.pk}"
        if obj.auth == McpServer.Auth.USER:
            count = obj.tokens.exclude(user_key="").count()
            return format_html('Each end user authorises it from the app. <a href="{}">{} user grants</a>.',
                               grants, count)
        held = obj.tokens.filter(user_key="").first()
        state = f"Authorised (scope: {held.scope or 'none named'})." if held else "Not authorised yet."
        return format_html('{} <a class="button" href="{}">Authorise</a> <a href="{}">Grants</a>', state,
                           reverse("mcp-oauth-start", args=[obj.pk]), grants)


@admin.register(McpToken)
class McpTokenAdmin(admin.ModelAdmin):
    """The vault's grants: seen (never their tokens) and revoked (deleted), not made here."""

    list_display = ("server", "project", "user_key", "scope", "expires", "updated_at")
    list_filter = ("project", "server")
    search_fields = ("user_key", "server__name")
    fields = ("server", "project", "user_key", "scope", "expires", "created_at", "updated_at")
    readonly_fields = fields
    actions = ["delete_selected"]

    @admin.display(description="access token expires")
    def expires(self, obj: McpToken) -> str:
        if obj.expires_at is None:
            return "not said"
        from datetime import datetime, timezone

        return datetime.fromtimestamp(obj.expires_at, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(ProjectTool)
class ProjectToolAdmin(admin.ModelAdmin):
    list_display = ("name", "project", "enabled")
    list_filter = ("enabled", "project")
