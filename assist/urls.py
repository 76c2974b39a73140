"""Routes for thread names and suggestions, with and without `/v1` (the SDK uses both)."""
from django.urls import path

from assist import views

urlpatterns = [
    path("v1/threads/<str:thread_id>/messages/<str:message_id>/suggestions", views.suggestions,
         name="suggestions"),
    path("threads/<str:thread_id>/generate-name", views.generate_name, name="generate-name"),
    path("threads/<str:thread_id>/messages/<str:message_id>/suggestions", views.legacy_suggestions,
         name="legacy-suggestions"),
]
