"""The AG-UI route, included by the project's URLs on its own so the run lifecycle never imports its adapter."""
from django.urls import path

from runs.agui import views

urlpatterns = [
    path("agui", views.agui_run, name="agui"),
]
