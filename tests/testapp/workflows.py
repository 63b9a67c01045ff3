"""The workflows the tests run: the tutorial's fulfilment and small ones for single behaviours."""

from __future__ import annotations

from typing import Any

from django_workflows import Retry, WorkflowSignal, workflow

from .world import world

shipment_delivered = WorkflowSignal("shipment.delivered")
shipment_returned = WorkflowSignal("shipment.returned")


def fulfilment_id(order_id: str) -> str:
    return f"order-{order_id}"


@workflow("order-fulfilment", timeout="30d")
def fulfil_order(ctx: Any, order: dict[str, Any]) -> dict[str, Any]:
    charge = ctx.step(
        "charge-payment",
        lambda step: world.charge(order, step.idempotency_key),
        retry=Retry(attempts=5, delay="2s"),
        compensate=lambda charge, step: world.refund(charge["charge_id"], step.idempotency_key),
    )
    ctx.set_status("paid")
    ctx.step(
        "reserve-stock",
        lambda step: world.reserve(order["items"], step.idempotency_key),
        compensate=lambda reservation, step: world.release(reservation["reservation_id"]),
    )
    ctx.set_status("awaiting-delivery")
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
    ctx.commit("delivered")
    ctx.set_status("delivered")
    ctx.sleep("before-review-request", "7d")
    ctx.step("send-review-request", lambda step: world.mail(order["user_id"], step.idempotency_key))
    return {"charge_id": charge["charge_id"], "tracking_number": delivery["trackingNumber"]}


@workflow("parallel-reservations")
def reserve_each(ctx: Any, order: dict[str, Any]) -> list[str]:
    ctx.step(
        "charge-payment",
        lambda step: world.charge(order, step.idempotency_key),
        compensate=lambda charge, step: world.refund(charge["charge_id"], step.idempotency_key),
    )

    def reserve(index: int, item: dict[str, Any]) -> Any:
        return lambda: ctx.step(
            f"reserve-item-{index}",
            lambda step: world.reserve([item], step.idempotency_key),
            compensate=lambda reservation, step: world.release(reservation["reservation_id"]),
        )

    reservations = ctx.gather(*(reserve(i, item) for i, item in enumerate(order["items"])))
    return [r["reservation_id"] for r in reservations]


@workflow("wait-once")
def wait_once(ctx: Any, input: dict[str, Any]) -> Any:
    return ctx.wait_for_signal(
        "await", input.get("signal", "ping"), key=input.get("key"), timeout=input.get("timeout")
    )


@workflow("values")
def journaled_values(ctx: Any, input: Any) -> dict[str, Any]:
    values = {"now": ctx.now().isoformat(), "random": ctx.random(), "uuid": ctx.uuid()}
    ctx.sleep("pause", "1m")
    return values


@workflow("flaky")
def flaky(ctx: Any, input: dict[str, Any]) -> Any:
    return ctx.step(
        "call",
        lambda step: world.charge(
            {"id": "f", "total": 1, "user_id": input.get("user_id")}, step.idempotency_key
        ),
        retry=Retry(**input.get("retry", {})),
    )


@workflow("statuses")
def statuses(ctx: Any, input: Any) -> None:
    ctx.set_status({"stage": "one"})
    ctx.sleep("nap", "1h")
    ctx.set_status(input)
    ctx.sleep("second-nap", "1h")
