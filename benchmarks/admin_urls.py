"""The admin's URLs, for benchmarks/admin_scale.py."""

from django.contrib import admin
from django.urls import path

urlpatterns = [path("admin/", admin.site.urls)]
