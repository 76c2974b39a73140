from django.urls import path

from tools import views

urlpatterns = [
    path("mcp-auth/callback", views.oauth_callback_view, name="mcp-oauth-callback"),
    path("mcp-auth/start/<int:server_id>", views.oauth_start_view, name="mcp-oauth-start"),
    path("v1/mcp-servers/<str:server_name>/authorizations", views.grants_revoke_view, name="mcp-grants-revoke"),
]
