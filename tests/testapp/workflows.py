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


def _record_execution(instance_id: str, run: int, step_name: str) -> dict[str, Any]:
    import threading

    from .models import Execution

    Execution.objects.create(
        instance_id=instance_id,
        step=step_name,
        thread=threading.current_thread().name,
        run=run,
    )
    return {"step": step_name}


@workflow("recorded-steps")
def recorded_steps(ctx: Any, input: dict[str, Any]) -> dict[str, Any]:
    """Each step records (instance id, thread, run) in `Execution`: the race tests count them."""
    instance_id, run = ctx.instance_id, ctx.run  # read outside the steps: ctx is off-limits there
    results = [
        ctx.step(f"step-{i}", lambda step, i=i: _record_execution(instance_id, run, f"step-{i}"))
        for i in range(int(input.get("steps", 1)))
    ]
    return {"steps": len(results)}


# -- added for the core behaviour tests ------------------------------------------------------


@workflow("retry-raw")
def retry_raw(ctx: Any, input: dict[str, Any]) -> Any:
    """A step whose retry is taken as given: an int, False, or a dict of Retry fields."""
    retry = input.get("retry")
    if isinstance(retry, dict):
        retry = Retry(**retry)
    return ctx.step(
        "call",
        lambda step: world.charge({"id": "r", "total": 1}, step.idempotency_key),
        retry=retry,
    )


@workflow("retry-if")
def retry_if(ctx: Any, input: Any) -> Any:
    """Retries only while retry_if says so: attempt 1 is retried, attempt 2 is not."""
    return ctx.step(
        "call",
        lambda step: world.charge({"id": "r", "total": 1}, step.idempotency_key),
        retry=Retry(attempts=5, delay="1s", retry_if=lambda error, attempt: attempt < 2),
    )


@workflow("non-retryable")
def non_retryable(ctx: Any, input: Any) -> Any:
    return ctx.step(
        "charge-payment",
        lambda step: world.charge(
            {"id": "d", "total": 1, "user_id": "u_declined"}, step.idempotency_key
        ),
        retry=Retry(attempts=5, delay="1s"),
    )


@workflow("name-twice")
def name_twice(ctx: Any, input: Any) -> None:
    ctx.step(
        "charge-payment",
        lambda step: world.charge({"id": "t", "total": 1}, step.idempotency_key),
        compensate=lambda charge, step: world.refund(charge["charge_id"], step.idempotency_key),
    )
    ctx.step("charge-payment", lambda step: world.charge({"id": "t", "total": 1}, "again"))


@workflow("ctx-in-step")
def ctx_in_step(ctx: Any, input: Any) -> None:
    ctx.step(
        "charge-payment",
        lambda step: world.charge({"id": "c", "total": 1}, step.idempotency_key),
        compensate=lambda charge, step: world.refund(charge["charge_id"], step.idempotency_key),
    )
    ctx.step("bad", lambda step: ctx.now())


@workflow("swallow")
def swallow(ctx: Any, input: Any) -> str:
    try:
        ctx.sleep("nap", "1h")
    except Exception:  # noqa: BLE001 - the point of the test
        return "swallowed"
    return "slept"


@workflow("status-not-json")
def status_not_json(ctx: Any, input: Any) -> None:
    ctx.set_status({"a set": {1, 2}})
    ctx.sleep("nap", "1h")


@workflow("timed", timeout="1h")
def timed(ctx: Any, input: Any) -> str:
    ctx.step(
        "charge-payment",
        lambda step: world.charge({"id": "tm", "total": 1}, step.idempotency_key),
        compensate=lambda charge, step: world.refund(charge["charge_id"], step.idempotency_key),
    )
    ctx.sleep("long-nap", "2h")
    ctx.step("after", lambda step: world.mail("u", step.idempotency_key))
    return "done"


@workflow("many-steps")
def many_steps(ctx: Any, input: dict[str, Any]) -> int:
    ctx.step(
        "charge-payment",
        lambda step: world.charge({"id": "m", "total": 1}, step.idempotency_key),
        compensate=lambda charge, step: world.refund(charge["charge_id"], step.idempotency_key),
    )
    for i in range(input["n"]):
        ctx.step(f"step-{i}", lambda step, i=i: i)
    return input["n"]


@workflow("wait-match")
def wait_match(ctx: Any, input: Any) -> Any:
    return ctx.wait_for_signal("await", "ping", match=lambda payload: payload.get("ok") is True)


@workflow("wait-any-two")
def wait_any_two(ctx: Any, input: Any) -> dict[str, Any]:
    outcome = ctx.wait_for_any("await", a=ctx.signal_wait("a"), b=ctx.signal_wait("b"))
    return {"key": outcome.key, "value": outcome.value}


@workflow("wait-twice")
def wait_twice(ctx: Any, input: Any) -> list[Any]:
    first = ctx.wait_for_signal("first", "ping")
    second = ctx.wait_for_signal("second", "ping")
    return [first, second]


@workflow("versioned", version=1)
def versioned_v1(ctx: Any, input: Any) -> str:
    return "v1"


@workflow("versioned", version=2)
def versioned_v2(ctx: Any, input: Any) -> str:
    return "v2"


@workflow("parallel-reservations-slow-first")
def reserve_each_slow_first(ctx: Any, order: dict[str, Any]) -> list[str]:
    """As parallel-reservations, but the first item's reservation finishes last."""
    import time

    ctx.step(
        "charge-payment",
        lambda step: world.charge(order, step.idempotency_key),
        compensate=lambda charge, step: world.refund(charge["charge_id"], step.idempotency_key),
    )

    def reserve_item(index: int, item: dict[str, Any], step: Any) -> Any:
        if index == 0:
            time.sleep(0.3)
        return world.reserve([item], step.idempotency_key)

    def reserve(index: int, item: dict[str, Any]) -> Any:
        return lambda: ctx.step(
            f"reserve-item-{index}",
            lambda step: reserve_item(index, item, step),
            compensate=lambda reservation, step: world.release(reservation["reservation_id"]),
        )

    reservations = ctx.gather(*(reserve(i, item) for i, item in enumerate(order["items"])))
    return [r["reservation_id"] for r in reservations]


# -- added for the operate tests (retry, delete, purge, result) ------------------------------

import threading as _threading  # noqa: E402

hang_gates: dict[str, _threading.Event] = {
    "entered": _threading.Event(),
    "release": _threading.Event(),
}
"""ops-hang's step sets `entered` and blocks until `release` (tests reset both)."""


@workflow("ops-two-steps")
def ops_two_steps(ctx: Any, input: dict[str, Any]) -> dict[str, Any]:
    """A step that always works, then one that fails while world.failures["charge"] says so."""
    reservation = ctx.step(
        "reserve",
        lambda step: world.reserve([{"product": "kibble", "quantity": 1}], step.idempotency_key),
    )
    charge = ctx.step(
        "charge",
        lambda step: world.charge({"id": "o", "total": 1}, step.idempotency_key),
        retry=Retry(attempts=input.get("attempts", 1), delay="1s"),
    )
    return {"reservation": reservation["reservation_id"], "charge": charge["charge_id"]}


@workflow("ops-timed-sleep", timeout="1h")
def ops_timed_sleep(ctx: Any, input: Any) -> str:
    """No compensations: the run timeout fails it while it sleeps, and it can be retried."""
    ctx.step("first", lambda step: world.mail("u", step.idempotency_key))
    ctx.sleep("nap", "2h")
    ctx.step("after", lambda step: world.mail("v", step.idempotency_key))
    return "slept"


@workflow("ops-timed-wait", timeout="1h")
def ops_timed_wait(ctx: Any, input: Any) -> Any:
    outcome = ctx.wait_for_any(
        "await", go=ctx.signal_wait("ops-go", key=input.get("key")), timed_out=ctx.timer("2h")
    )
    return outcome.key


@workflow("ops-deploy")
def ops_deploy(ctx: Any, input: Any) -> str:
    """The fixed code of a deploy: the tests swap in a version that broke replay."""
    ctx.step("first", lambda step: world.mail("u", step.idempotency_key))
    ctx.sleep("nap", "1h")
    ctx.step("second", lambda step: world.mail("v", step.idempotency_key))
    return "deployed"


@workflow("ops-undo")
def ops_undo(ctx: Any, input: dict[str, Any]) -> str:
    """Two steps with compensations that give up after one attempt; then ctx.fail() or a wait."""
    charge = ctx.step(
        "charge-payment",
        lambda step: world.charge({"id": "u", "total": 1}, step.idempotency_key),
        compensate=lambda charge, step: world.refund(charge["charge_id"], step.idempotency_key),
        compensate_retry=1,
    )
    ctx.step(
        "reserve-stock",
        lambda step: world.reserve([{"product": "litter", "quantity": 1}], step.idempotency_key),
        compensate=lambda reservation, step: world.release(reservation["reservation_id"]),
        compensate_retry=1,
    )
    if input.get("fail"):
        ctx.fail("boom")
    ctx.wait_for_signal("await", "ops-never")
    return charge["charge_id"]


@workflow("ops-hang")
def ops_hang(ctx: Any, input: Any) -> str:
    def hang(step: Any) -> str:
        hang_gates["entered"].set()
        hang_gates["release"].wait(30)
        return "released"

    ctx.step("hang", hang)
    ctx.step("after", lambda step: world.mail("h", step.idempotency_key))
    return "done"


@workflow("ops-quick")
def ops_quick(ctx: Any, input: Any) -> Any:
    import time

    ctx.step("work", lambda step: time.sleep(float(input.get("seconds", 0))) or "ok")
    return {"echo": input.get("echo")}
