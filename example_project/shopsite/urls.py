"""URLs of the example shop: the admin, and the shop's pages and JSON endpoints."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("workflows/", include("django_workflows.urls")),  # ctx.webhook()'s URLs
    path("", include("shop.urls")),
]
