"""The URLs django_workflows serves: include them with
`path("workflows/", include("django_workflows.urls"))`; their namespace is `django_workflows`."""

from __future__ import annotations

from django.urls import path

from . import metrics, views

app_name = "django_workflows"

urlpatterns = [
    path("webhooks/<str:token>/", views.webhook, name="webhook"),
    # The database's gauges for Prometheus (staff users, or the METRICS_TOKEN bearer).
    path("metrics/", metrics.view, name="metrics"),
]
