"""The order fulfilment of the tutorial: charge, reserve, wait for the carrier, then a review.
And the nightly sales report, a scheduled workflow."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import Sum
from django.db.models.signals import post_save

from django_workflows import (
    Concurrency,
    RateLimit,
    Retry,
    Schedule,
    WorkflowSignal,
    signal_on,
    start_on,
    workflow,
)

from . import inventory, mail, payments
from .models import Delivery, Order
from .signals import carrier_reported

# The carrier POSTs {"type", "reference", "trackingNumber", "occurredAt"} to our webhook;
# "reference" is the order id, and the key of both signals.
shipment_delivered = WorkflowSignal("shipment.delivered")
"""Sent when the webhook saves a delivery, awaited by the fulfilment. The order id is its key."""

shipment_returned = WorkflowSignal("shipment.returned")
"""Sent when the carrier brings the parcel back. The order id is its key."""


def fulfilment_id(order_id: str) -> str:
    """One fulfilment per order: the order id makes the workflow instance id."""
    return f"order-{order_id}"


def report_key(delivery: Delivery, **kwargs: Any) -> str:
    """The key of a carrier report's signal: its order's id, which the fulfilment waits with."""
    return delivery.order_id


def report_id(delivery: Delivery, **kwargs: Any) -> str:
    """One signal per parcel report: the carrier's retried webhook stores no second one."""
    return f"{delivery.order_id}:{delivery.tracking_number}"


def report_event(delivery: Delivery, **kwargs: Any) -> dict[str, Any]:
    return delivery.as_event()


def order_tags(instance: Order, **kwargs: Any) -> list[str]:
    """Support filters the express orders' fulfilments in the admin."""
    return ["express"] if instance.shipping == Order.Shipping.EXPRESS else []


# A new order starts its fulfilment in the transaction that saves it; a later save of the
# order (its status changing) starts nothing: `when` looks at post_save's `created`. The
# instance is about the order (its admin page lists it), tagged, and searchable by its total.
@start_on(
    post_save,
    sender=Order,
    when=lambda created, **kw: created,
    id=lambda instance, **kw: fulfilment_id(instance.pk),
    input=lambda instance, **kw: instance.as_dict(),
    subject=lambda instance, **kw: instance,
    tags=order_tags,
    attributes=lambda instance, **kw: {"total": instance.total},
)
# The carrier's reports reach the waiting fulfilment in the transaction that saves them.
@signal_on(
    carrier_reported,
    signal=shipment_delivered,
    when=lambda delivery, **kw: delivery.kind == Delivery.Kind.DELIVERED,
    key=report_key,
    id=report_id,
    payload=report_event,
)
@signal_on(
    carrier_reported,
    signal=shipment_returned,
    when=lambda delivery, **kw: delivery.kind == Delivery.Kind.RETURNED,
    key=report_key,
    id=report_id,
    payload=report_event,
)
@workflow(
    "order-fulfilment",
    timeout="30d",
    # One execution per customer at a time, so two of their orders never charge their card at once.
    concurrency=Concurrency(limit=1, key=lambda order: order["user_id"]),
    # Each execution sends the payment provider one request at most: a charge, or a refund.
    rate_limit=RateLimit(max=10, duration="1s"),
)
def fulfil_order(ctx: Any, order: dict[str, Any]) -> dict[str, Any]:
    """Charge the card, reserve the stock, wait for the delivery, then ask for a review."""
    # The order page's status lines, live (shop/templates/shop/order.html): each write is
    # journaled, so a replay of the workflow adds no line twice.
    progress = ctx.stream("progress")
    charge = ctx.step(
        "charge-payment",
        lambda step: payments.charge(order, step.idempotency_key),
        retry=Retry(attempts=5, delay="2s"),
        compensate=lambda charge, step: payments.refund(charge["charge_id"], step.idempotency_key),
    )
    ctx.set_status("paid")
    progress.write({"line": "Payment received."})

    ctx.step(
        "reserve-stock",
        lambda step: inventory.reserve(order["items"], step.idempotency_key),
        compensate=lambda reservation, step: inventory.release(reservation["reservation_id"]),
    )
    ctx.set_status("awaiting-delivery")
    progress.write({"line": "Stock reserved; waiting for the carrier."})

    outcome = ctx.wait_for_any(
        "await-delivery",
        delivered=ctx.signal_wait(shipment_delivered, key=order["id"]),
        returned=ctx.signal_wait(shipment_returned, key=order["id"]),
        timed_out=ctx.timer("3d"),
    )
    if outcome.key == "returned":
        ctx.fail(f"The carrier returned order {order['id']} to the warehouse.")
    if outcome.key == "timed_out":
        ctx.fail(f"Order {order['id']} was not delivered within 3 days.")
    delivery = outcome.value

    # Point of no return: the parcel arrived, so nothing from here on refunds the charge
    # or releases the stock, not a failure and not a cancel.
    ctx.commit("delivered")
    ctx.set_status("delivered")
    progress.write({"line": f"Delivered ({delivery['trackingNumber']})."})

    ctx.sleep("before-review-request", "7d")
    ctx.step(
        "send-review-request",
        lambda step: mail.send_review_request(order, step.idempotency_key),
    )
    progress.write({"line": "We asked for your review."})
    progress.close()

    return {"charge_id": charge["charge_id"], "tracking_number": delivery["trackingNumber"]}


REFUND_APPROVAL_ABOVE = 10_000
"""In cents: a refund above 100 € waits for a manager's approval in the admin."""


def refund_id(charge_id: str) -> str:
    """One refund request per charge: the charge id makes the workflow instance id."""
    return f"refund-{charge_id}"


@workflow("refund-charge")
def refund_charge(ctx: Any, request: dict[str, Any]) -> dict[str, Any]:
    """Refund a charge in full; above 100 €, only once a manager resumes it in the admin."""
    if request["amount"] > REFUND_APPROVAL_ABOVE:
        ctx.set_status("awaiting-approval")
        ctx.breakpoint("manager-approval")
    refund = ctx.step(
        "refund", lambda step: payments.refund(request["charge_id"], step.idempotency_key)
    )
    ctx.set_status("refunded")
    return refund


def report_day(occurrence: Any) -> dict[str, str]:
    """The day the report covers: the one before the occurrence (a ScheduleOccurrence, whose
    `at` is the occurrence's time), "2026-01-01" on 2 January."""
    return {"day": (occurrence.at - timedelta(days=1)).date().isoformat()}


def sales_of(day: str) -> dict[str, Any]:
    """The orders placed on a day (UTC) and their total in cents, the cancelled and returned
    ones left out of the total."""
    start = datetime.fromisoformat(day).replace(tzinfo=UTC)
    placed = Order.objects.filter(created_at__gte=start, created_at__lt=start + timedelta(days=1))
    kept = placed.exclude(status__in=[Order.Status.CANCELLED, Order.Status.RETURNED])
    return {
        "day": day,
        "orders": placed.count(),
        "total": kept.aggregate(total=Sum("total"))["total"] or 0,
    }


@workflow(
    "sales-report",
    # At 02:00 UTC every night, the day before's sales: the admin's schedules page lists it.
    schedules=[Schedule("nightly-sales-report", cron="0 2 * * *", input=report_day)],
)
def sales_report(ctx: Any, request: dict[str, str]) -> dict[str, Any]:
    """Count a day's orders and their total; the instance's output is the report."""
    return ctx.step("count-orders", lambda step: sales_of(request["day"]))
