"""What the shop's views do: each change to an order commits with its workflow's change."""

from __future__ import annotations

from typing import Any

from django.db import transaction

import django_workflows

from .models import Charge, Delivery, Order
from .signals import carrier_reported
from .workflows import fulfilment_id, refund_id


class OrderNotFound(Exception):
    """No order has this id (HTTP 404)."""

    status_code = 404


class OrderConflict(Exception):
    """The order is past the point where this change makes sense (HTTP 409)."""

    status_code = 409


def place_order(
    user_id: str, items: list[dict[str, Any]], shipping: str = Order.Shipping.STANDARD
) -> tuple[Order, django_workflows.InstanceStatus]:
    """Save an order; its post_save starts its fulfilment in the same transaction
    (`start_on` in shop/workflows.py).

    Returns the order and its fulfilment's `InstanceStatus`. If anything in the transaction
    fails, neither the order nor the workflow instance exists.
    """
    total = sum(item["price"] * item["quantity"] for item in items)
    with transaction.atomic():
        order = Order.objects.create(user_id=user_id, items=items, shipping=shipping, total=total)
        # Started by the save, in this transaction: it exists if and only if the order does.
        fulfilment = django_workflows.get_status(fulfilment_id(order.id))
    assert fulfilment is not None, "shop/workflows.py starts it from the order's post_save"
    return order, fulfilment


def record_carrier_event(event: dict[str, Any], kind: str) -> Delivery:
    """Save what the carrier reports and send `carrier_reported`, whose `signal_on` wakes the
    order's fulfilment; the order's status, the report and the signal commit together.

    A retried report finds the first one, and its signal is stored once. Raises `OrderNotFound`.
    """
    with transaction.atomic():
        updated = Order.objects.filter(pk=event["reference"]).update(status=kind)
        if not updated:
            # Rolls back: no report and no signal for an order the shop doesn't know.
            raise OrderNotFound(f"Order {event['reference']} not found.")
        delivery, _ = Delivery.objects.get_or_create(
            order_id=event["reference"],
            kind=kind,
            tracking_number=event["trackingNumber"],
            defaults={"occurred_at": event["occurredAt"]},
        )
        # send(), not send_robust(): a failed signal raises and rolls all of it back.
        carrier_reported.send(sender=Delivery, delivery=delivery)
    return delivery


def mark_delivered(event: dict[str, Any]) -> Delivery:
    """Record the carrier's delivery, which wakes the order's fulfilment. Raises `OrderNotFound`."""
    return record_carrier_event(event, Delivery.Kind.DELIVERED)


def mark_returned(event: dict[str, Any]) -> Delivery:
    """Record that the carrier brought the parcel back. Raises `OrderNotFound`."""
    return record_carrier_event(event, Delivery.Kind.RETURNED)


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
    # The refund is about the order the charge paid for: its admin page lists it too.
    order = Order.objects.filter(pk=charge.reference).first()
    return django_workflows.start(
        "refund-charge",
        {"charge_id": charge.id, "amount": charge.amount, "reason": reason},
        id=refund_id(charge.id),
        subject=order,
        attributes={"amount": charge.amount},
    )
