"""A URLconf without django_workflows.urls, for the test of a missing webhook route."""

from __future__ import annotations

urlpatterns: list = []
