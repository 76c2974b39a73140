from django.urls import path

from retention.views import user_forget_view

urlpatterns = [
    path("users/<path:user_key>", user_forget_view, name="user-forget"),
]
