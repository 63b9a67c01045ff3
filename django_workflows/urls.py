"""The URLs django_workflows serves: include them with
`path("workflows/", include("django_workflows.urls"))`; their namespace is `django_workflows`."""

from __future__ import annotations

from django.urls import path

from . import views

app_name = "django_workflows"

urlpatterns = [
    path("webhooks/<str:token>/", views.webhook, name="webhook"),
]
