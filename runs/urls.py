from django.urls import path

from runs import views
from runs.stream import views as events_views

urlpatterns = [
    path("threads/runs", views.create_thread_run, name="thread-runs"),
    path("threads/<str:thread_id>/runs", views.create_run, name="runs"),
    path("threads/<str:thread_id>/events", events_views.thread_events, name="thread-events"),
    path("threads/<str:thread_id>/runs/<str:run_id>", views.run_detail, name="run"),
    path("threads/<str:thread_id>/runs/<str:run_id>/events", events_views.run_events, name="run-events"),
]
