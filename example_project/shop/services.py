"""What the shop's views do: each change to an order commits with its workflow's change."""

from __future__ import annotations

from typing import Any

from django.db import transaction

import django_workflows

from .models import Charge, Order
from .workflows import (
    fulfil_order,
    fulfilment_id,
    refund_id,
    shipment_delivered,
    shipment_returned,
)


class OrderNotFound(Exception):
    """No order has this id (HTTP 404)."""

    status_code = 404


class OrderConflict(Exception):
    """The order is past the point where this change makes sense (HTTP 409)."""

    status_code = 409


def place_order(
    user_id: str, items: list[dict[str, Any]], shipping: str = Order.Shipping.STANDARD
) -> tuple[Order, django_workflows.StartResult]:
    """Save an order and start its fulfilment, in one transaction.

    Returns the order and the `StartResult`. If anything in the transaction fails, neither the
    order nor the workflow instance exists.
    """
    total = sum(item["price"] * item["quantity"] for item in items)
    with transaction.atomic():
        order = Order.objects.create(user_id=user_id, items=items, shipping=shipping, total=total)
        # Same transaction: the fulfilment exists if and only if the order does.
        fulfilment = django_workflows.start(
            fulfil_order, order.as_dict(), id=fulfilment_id(order.id)
        )
    return order, fulfilment


def _mark_and_signal(
    event: dict[str, Any], status: str, signal: django_workflows.WorkflowSignal
) -> django_workflows.SignalResult:
    with transaction.atomic():
        updated = Order.objects.filter(pk=event["reference"]).update(status=status)
        if not updated:
            # Rolls back: no signal is stored for an order the shop doesn't know.
            raise OrderNotFound(f"Order {event['reference']} not found.")
        # The order's new status and the signal commit together.
        return django_workflows.signal(signal, event, key=event["reference"])


def mark_delivered(event: dict[str, Any]) -> django_workflows.SignalResult:
    """Record the carrier's delivery and wake the order's fulfilment. Raises `OrderNotFound`."""
    return _mark_and_signal(event, Order.Status.DELIVERED, shipment_delivered)


def mark_returned(event: dict[str, Any]) -> django_workflows.SignalResult:
    """Record that the carrier brought the parcel back. Raises `OrderNotFound`."""
    return _mark_and_signal(event, Order.Status.RETURNED, shipment_returned)


def cancel_order(order_id: str, reason: str | None) -> django_workflows.CancelResult:
    """Cancel an order's fulfilment for customer support; returns the `CancelResult`.

    Raises `OrderNotFound`, and `OrderConflict` once the order was delivered (start a return
    instead). The order is marked cancelled only if the workflow accepted the cancel.
    """
    with transaction.atomic():
        # Locking the order keeps a delivery webhook from slipping in between check and cancel.
        order = Order.objects.select_for_update().filter(pk=order_id).first()
        if order is None:
            raise OrderNotFound(f"Order {order_id} not found.")
        if order.status == Order.Status.DELIVERED:
            raise OrderConflict(f"Order {order_id} was delivered. Start a return instead.")
        # accepted is False if the fulfilment already ended or was already cancelled.
        result = django_workflows.cancel(fulfilment_id(order_id), reason)
        if result.accepted:
            Order.objects.filter(pk=order_id).update(status=Order.Status.CANCELLED)
    return result


def request_refund(charge_id: str, reason: str) -> django_workflows.StartResult:
    """Ask for a charge's refund: it starts at once, or, above 100 €, waits for a manager."""
    charge = Charge.objects.get(pk=charge_id)
    return django_workflows.start(
        "refund-charge",
        {"charge_id": charge.id, "amount": charge.amount, "reason": reason},
        id=refund_id(charge.id),
    )
