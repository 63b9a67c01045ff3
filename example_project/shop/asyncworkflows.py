"""The tutorial's order fulfilment written as an async def workflow: the same steps, waits and
compensations, every ctx call awaited.

The shop registers the sync one (workflows.py); the tests run the tutorial's scenarios against
this one too (tests/test_async_fulfilment.py swaps it in under the same name and version).
Its steps call the shop's services, which use the ORM: they stay sync functions, which an async
workflow runs on the engine's thread, off the event loop, where Django allows the ORM.
"""

from __future__ import annotations

from typing import Any

from django_workflows import Retry

from . import inventory, mail, payments
from .workflows import shipment_delivered, shipment_returned


async def fulfil_order(ctx: Any, order: dict[str, Any]) -> dict[str, Any]:
    """Charge the card, reserve the stock, wait for the delivery, then ask for a review."""
    charge = await ctx.step(
        "charge-payment",
        lambda step: payments.charge(order, step.idempotency_key),
        retry=Retry(attempts=5, delay="2s"),
        compensate=lambda charge, step: payments.refund(charge["charge_id"], step.idempotency_key),
    )
    await ctx.set_status("paid")

    await ctx.step(
        "reserve-stock",
        lambda step: inventory.reserve(order["items"], step.idempotency_key),
        compensate=lambda reservation, step: inventory.release(reservation["reservation_id"]),
    )
    await ctx.set_status("awaiting-delivery")

    # The conditions only describe the wait: built without await, awaited together.
    outcome = await ctx.wait_for_any(
        "await-delivery",
        delivered=ctx.signal_wait(shipment_delivered, key=order["id"]),
        returned=ctx.signal_wait(shipment_returned, key=order["id"]),
        timed_out=ctx.timer("3d"),
    )
    if outcome.key == "returned":
        await ctx.fail(f"The carrier returned order {order['id']} to the warehouse.")
    if outcome.key == "timed_out":
        await ctx.fail(f"Order {order['id']} was not delivered within 3 days.")
    delivery = outcome.value

    # Point of no return: the parcel arrived, so nothing from here on refunds the charge
    # or releases the stock, not a failure and not a cancel.
    await ctx.commit("delivered")
    await ctx.set_status("delivered")

    await ctx.sleep("before-review-request", "7d")
    await ctx.step(
        "send-review-request",
        lambda step: mail.send_review_request(order, step.idempotency_key),
    )

    return {"charge_id": charge["charge_id"], "tracking_number": delivery["trackingNumber"]}
