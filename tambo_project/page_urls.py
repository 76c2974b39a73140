"""The browser page's routes (the page itself lives in templates/ and static/)."""
from django.urls import path

from tambo_project import page_views

urlpatterns: list = [
    path("", page_views.chat_page, name="chat"),
    path("login/", page_views.login_view, name="login"),
    path("logout/", page_views.logout_view, name="logout"),
]
