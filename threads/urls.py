from django.urls import path

from threads import views

urlpatterns = [
    path("threads", views.ThreadListView.as_view(), name="threads"),
    path("threads/<str:thread_id>", views.ThreadDetailView.as_view(), name="thread"),
    path("threads/<str:thread_id>/messages", views.MessageListView.as_view(), name="messages"),
    path("threads/<str:thread_id>/messages/<str:message_id>", views.MessageDetailView.as_view(), name="message"),
]
urlpatterns.append(
    path("threads/<str:thread_id>/components/<str:component_id>/state", views.ComponentStateView.as_view(),
         name="component-state"),
)
