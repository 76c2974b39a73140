"""The gateway's routes, included at the root URLconf."""
from django.urls import path, re_path

from gateway import views

urlpatterns = [
    path("api/chat/completions", views.chat_completions, name="gateway-chat-completions"),
    path("api/responses", views.responses, name="gateway-responses"),
    path("api/models", views.models, name="gateway-models"),
    path("api/models/<path:model_id>", views.models, name="gateway-model"),
    re_path(r"^api/(?P<rest>.*)$", views.not_found),
]
