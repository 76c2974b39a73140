from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularRedocView

# Registers the x-api-key scheme with drf-spectacular before any schema is generated.
from tambo_project import openapi  # noqa: F401
from tambo_project import audio_views, views
from telemetry.views import metrics_view
from threads import mcp_views

# Django's own refusals (a bad Host) in the route's error shape.
handler400 = "tambo_project.views.bad_request"
# An unknown path off the API answers a 404 problem too, unless a browser asks for a page.
handler404 = "tambo_project.views.not_found"

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    # Browsers ask for /favicon.ico on pages that name no icon (the admin's): the page's icon.
    path("favicon.ico", views.favicon, name="favicon"),
    path("metrics", metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    # JSON whatever the Accept header says (the plain view would answer YAML).
    path("v1/openapi.json", SpectacularJSONAPIView.as_view(), name="openapi"),
    path("v1/docs", SpectacularRedocView.as_view(url_name="openapi", template_name="api_docs.html"),
         name="api-docs"),
    # Run routes come first: `threads/runs` must not be read as a thread id.
    path("v1/", include("retention.urls")),
    path("v1/", include("runs.urls")),
    path("v1/", include("runs.agui.urls")),
    path("v1/", include("threads.urls")),
    path("audio/transcribe", audio_views.transcribe_view, name="audio-transcribe"),
    # The browser's MCP gateway (docs/tools.md#the-browsers-mcp-endpoint), before the SDK's older routes.
    path("auth/mcp/access-token", mcp_views.access_token_view, name="mcp-access-token"),
    path("mcp", mcp_views.mcp_view, name="mcp"),
    path("", include("projects.urls")),
    path("", include("tools.urls")),
    path("", include("gateway.urls")),
    # Thread names and suggestions: /v1 and the SDK's paths without it.
    path("", include("assist.urls")),
    path("", include("tambo_project.page_urls")),
]
