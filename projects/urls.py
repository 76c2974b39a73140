from django.urls import path

from projects import oauth

urlpatterns = [
    path("oauth/token", oauth.token_view, name="oauth-token"),
]
