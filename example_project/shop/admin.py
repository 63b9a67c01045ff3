"""The shop in the admin: orders and the stand-in services' rows, to look at, not to edit
(stock levels excepted, so you can restock a product)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from django_workflows.admin import WorkflowInstanceInline

from .models import Charge, Delivery, Order, OutgoingMail, Refund, Reservation, Stock


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows written by the shop's code only: orders change through their workflow."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Order)
class OrderAdmin(ReadOnlyAdmin):
    list_display = ["id", "user_id", "status", "shipping", "total", "created_at"]
    list_filter = ["status", "shipping"]
    search_fields = ["id", "user_id"]
    date_hierarchy = "created_at"
    # The order's page lists the workflow instances started with `subject=` the order.
    inlines = [WorkflowInstanceInline]


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdmin):
    list_display = ["tracking_number", "order", "kind", "occurred_at", "received_at"]
    list_filter = ["kind"]
    search_fields = ["tracking_number", "order__id"]


@admin.register(Charge)
class ChargeAdmin(ReadOnlyAdmin):
    list_display = ["id", "reference", "amount", "currency", "status", "created_at"]
    list_filter = ["status"]
    search_fields = ["id", "reference", "idempotency_key"]


@admin.register(Refund)
class RefundAdmin(ReadOnlyAdmin):
    list_display = ["id", "charge", "amount", "created_at"]
    search_fields = ["id", "charge__id", "idempotency_key"]


@admin.register(Stock)
class StockAdmin(admin.ModelAdmin):
    list_display = ["product_id", "quantity"]
    list_editable = ["quantity"]
    search_fields = ["product_id"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Reservation)
class ReservationAdmin(ReadOnlyAdmin):
    list_display = ["id", "created_at", "released_at"]
    search_fields = ["id"]


@admin.register(OutgoingMail)
class OutgoingMailAdmin(ReadOnlyAdmin):
    list_display = ["message_id", "recipient", "subject", "created_at"]
    search_fields = ["message_id", "recipient"]
