from django.urls import path, re_path

from projects import legacy_views, oauth

urlpatterns = [
    path("oauth/token", oauth.token_view, name="oauth-token"),
    path("projects", legacy_views.project_current, name="project-current"),
    re_path(r"^(?:projects/|registry(?:/|$)|storage/presign$)", legacy_views.not_served),
]
