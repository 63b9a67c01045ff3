"""The tests' business objects in the admin, each listing its workflow instances (the inline)."""

from __future__ import annotations

from django.contrib import admin

from django_workflows.admin import WorkflowInstanceInline

from .models import Ledger, Order


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    """Editable, so that a test can post the page and see the inline's rows stay unchanged."""

    list_display = ["id", "customer"]
    inlines = [WorkflowInstanceInline]


@admin.register(Ledger)
class LedgerAdmin(admin.ModelAdmin):
    list_display = ["order_id", "total"]
    inlines = [WorkflowInstanceInline]
