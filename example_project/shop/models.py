"""The shop's orders and the carrier's reports about them, and the tables behind the stand-in payment, inventory and mail services."""

from __future__ import annotations

import secrets
from typing import Any

from django.db import models


def new_order_id() -> str:
    """A short random order id, 8 hex characters as in the tutorial."""
    return secrets.token_hex(4)


class Order(models.Model):
    """An order placed in the shop; its fulfilment is the workflow `order-<id>`."""

    class Shipping(models.TextChoices):
        STANDARD = "standard"
        EXPRESS = "express"

    class Status(models.TextChoices):
        PLACED = "placed"
        DELIVERED = "delivered"
        RETURNED = "returned"
        CANCELLED = "cancelled"

    id = models.CharField(primary_key=True, max_length=8, default=new_order_id, editable=False)
    user_id = models.CharField(max_length=255)
    # [{"productId": "salmon-kibble-2kg", "quantity": 1, "price": 2499}], prices in cents
    items = models.JSONField()
    shipping = models.CharField(max_length=16, choices=Shipping.choices, default=Shipping.STANDARD)
    total = models.PositiveIntegerField(help_text="In cents.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PLACED)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Order {self.id}"

    def as_dict(self) -> dict[str, Any]:
        """The order as JSON: the fulfilment workflow's input and the API's answer."""
        return {
            "id": self.id,
            "user_id": self.user_id,
            "items": self.items,
            # Plain strings, not the choices' enum members: this is JSON.
            "shipping": str(self.shipping),
            "total": self.total,
            "status": str(self.status),
        }


class Delivery(models.Model):
    """What the carrier's webhook reported about an order's parcel: delivered, or returned."""

    class Kind(models.TextChoices):
        DELIVERED = "delivered"
        RETURNED = "returned"

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="deliveries")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    tracking_number = models.CharField(max_length=255)
    occurred_at = models.CharField(max_length=64, help_text="As the carrier reported it.")
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-received_at"]
        verbose_name_plural = "deliveries"
        constraints = [
            # The carrier retries its webhook: a retried report finds the first one.
            models.UniqueConstraint(
                fields=["order", "kind", "tracking_number"], name="one_report_per_parcel"
            )
        ]

    def __str__(self) -> str:
        return f"{self.tracking_number} {self.kind}"

    def as_event(self) -> dict[str, Any]:
        """The report as the carrier sent it: the payload of the fulfilment's signal."""
        return {
            "type": f"shipment.{self.kind}",
            "reference": self.order_id,
            "trackingNumber": self.tracking_number,
            "occurredAt": self.occurred_at,
        }


class Charge(models.Model):
    """A card charge at the stand-in payment provider, one per idempotency key."""

    class Status(models.TextChoices):
        SUCCEEDED = "succeeded"
        DECLINED = "declined"

    id = models.CharField(primary_key=True, max_length=32)
    idempotency_key = models.CharField(max_length=255, unique=True)
    reference = models.CharField(max_length=255, help_text="The order id.")
    amount = models.PositiveIntegerField(help_text="In cents.")
    currency = models.CharField(max_length=3, default="USD")
    status = models.CharField(max_length=16, choices=Status.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.id


class Refund(models.Model):
    """A refund of a charge at the stand-in payment provider, one per idempotency key."""

    id = models.CharField(primary_key=True, max_length=32)
    idempotency_key = models.CharField(max_length=255, unique=True)
    charge = models.ForeignKey(Charge, on_delete=models.PROTECT, related_name="refunds")
    amount = models.PositiveIntegerField(help_text="In cents.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.id


class Stock(models.Model):
    """How many units of a product the warehouse has that no reservation holds."""

    product_id = models.CharField(primary_key=True, max_length=255)
    quantity = models.PositiveIntegerField()

    class Meta:
        ordering = ["product_id"]
        verbose_name_plural = "stock"

    def __str__(self) -> str:
        return f"{self.product_id}: {self.quantity}"


class Reservation(models.Model):
    """Stock set aside for an order; the idempotency key is its primary key."""

    id = models.CharField(primary_key=True, max_length=255)
    items = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
    released_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.id


class OutgoingMail(models.Model):
    """A message handed to the stand-in mail provider; the idempotency key is its message id."""

    message_id = models.CharField(primary_key=True, max_length=255)
    recipient = models.CharField(max_length=255, help_text="The customer's user id.")
    subject = models.CharField(max_length=255)
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "outgoing mail"

    def __str__(self) -> str:
        return self.subject
