"""Start child workflows: the docs page's "Start child workflows", rule by rule.

The shipment is a child of the fulfilment: it books the carrier's pickup (cancelled if it is
undone), then waits for the delivery or the return.
"""

from __future__ import annotations

import pytest

import django_workflows as wf
from django_workflows import WorkflowSignal
from django_workflows.errors import ChildWorkflowFailedError
from django_workflows.models import WorkflowInstance
from tests.core.helpers import order

pytestmark = pytest.mark.django_db

delivered = WorkflowSignal("shipment.delivered")
returned = WorkflowSignal("shipment.returned")


@pytest.fixture
def shop(define, world):
    """The fulfilment with its shipment as a child, and the carrier's bookings."""
    carrier = {"booked": [], "cancelled": []}

    @define("shipment")
    def shipment(ctx, order):
        pickup = ctx.step(
            "book-pickup",
            lambda step: carrier["booked"].append(step.idempotency_key) or {"pickup_id": "p1"},
            compensate=lambda booking, step: carrier["cancelled"].append(booking["pickup_id"]),
        )
        outcome = ctx.wait_for_any(
            "await-delivery",
            delivered=ctx.signal_wait(delivered, key=order["id"]),
            returned=ctx.signal_wait(returned, key=order["id"]),
            timed_out=ctx.timer("3d"),
        )
        if outcome.key == "returned":
            ctx.fail(f"The carrier returned order {order['id']} to the warehouse.")
        if outcome.key == "timed_out":
            ctx.fail(f"Order {order['id']} was not delivered within 3 days.")
        return {**outcome.value, "pickup": pickup["pickup_id"]}

    @define("fulfilment-with-shipment")
    def fulfil(ctx, order):
        charge = ctx.step(
            "charge-payment",
            lambda step: world.charge(order, step.idempotency_key),
            compensate=lambda charge, step: world.refund(charge["charge_id"], step.idempotency_key),
        )
        delivery = ctx.execute_child("shipment", order)
        return {"charge_id": charge["charge_id"], "tracking": delivery["trackingNumber"]}

    return carrier


def test_execute_child_starts_the_child_and_parks_until_it_ends(
    shop, world, workflow_clock, events
):
    wf.start("fulfilment-with-shipment", order(), id="order-71e1973d")
    wf.drain()
    child_id = "order-71e1973d/shipment#1"
    parent, child = wf.get_status("order-71e1973d", journal=True), wf.get_status(child_id)
    assert parent.status == "suspended" and child.status == "suspended"
    assert child.parent_id == "order-71e1973d" and child.input == order()
    assert [(e.name, e.kind, e.status) for e in parent.journal] == [
        ("charge-payment", "step", "completed"),
        (f"$child:{child_id}", "child", "completed"),
        (f"$result:{child_id}", "child", "pending"),
    ]
    [started] = [e for e in events if e.type == "child-started"]
    assert started.id == "order-71e1973d"
    assert started.data == {"child": child_id, "child_workflow": "shipment", "child_version": 1}

    wf.signal(delivered, {"trackingNumber": "TRK1"}, key="71e1973d")
    wf.drain()
    assert wf.get_status(child_id).status == "completed"
    parent = wf.get_status("order-71e1973d", journal=True)
    assert parent.status == "completed", parent.error
    assert parent.output == {"charge_id": parent.output["charge_id"], "tracking": "TRK1"}
    assert len(shop["booked"]) == 1  # replays found the same child: one booking
    assert WorkflowInstance.objects.filter(parent_id="order-71e1973d").count() == 1
    [kid] = wf.get_status("order-71e1973d", children=True).children
    assert (kid.id, kid.parent_id, kid.status) == (child_id, "order-71e1973d", "completed")
    assert [s.id for s in wf.list_instances(parent_id="order-71e1973d")] == [child_id]


def test_a_failed_child_fails_the_parent_and_both_undo(shop, world, workflow_clock):
    wf.start("fulfilment-with-shipment", order(), id="order-ret")
    wf.drain()
    wf.signal(returned, {"reason": "refused"}, key="71e1973d")
    wf.drain()
    child = wf.get_status("order-ret/shipment#1")
    assert child.status == "failed" and shop["cancelled"] == ["p1"]  # the child undid its pickup
    parent = wf.get_status("order-ret")
    assert parent.status == "failed"
    assert parent.error["name"] == "ChildWorkflowFailedError"
    assert parent.error["cause"]["name"] == "WorkflowFailedError"
    assert "returned order 71e1973d" in parent.error["cause"]["message"]
    assert "order-ret:$compensate:charge-payment" in world.refunds  # the parent undid its charge
    with pytest.raises(wf.WorkflowFailedError) as failed:
        wf.result("order-ret")
    assert failed.value.cause["name"] == "ChildWorkflowFailedError"


def test_a_parent_can_catch_the_childs_failure_and_try_something_else(define, workflow_clock):
    @define("carrier")
    def carrier(ctx, input):
        if input["name"] == "slow-carrier":
            ctx.fail("no pickup slot")
        return {"carrier": input["name"]}

    @define("shipping-with-fallback")
    def ship(ctx, input):
        try:
            return ctx.execute_child("carrier", {"name": "slow-carrier"})
        except ChildWorkflowFailedError as error:
            assert error.status == "failed" and error.instance_id.endswith("/carrier#1")
            assert error.cause["message"] == "no pickup slot"
            return ctx.execute_child("carrier", {"name": "fast-carrier"})

    wf.start("shipping-with-fallback", {}, id="fallback")
    for _ in range(4):
        wf.drain()
    assert wf.get_status("fallback").output == {"carrier": "fast-carrier"}
    assert [k.id for k in wf.get_status("fallback", children=True).children] == [
        "fallback/carrier#1",
        "fallback/carrier#2",
    ]


def test_start_child_returns_a_handle_that_races_a_timer_in_wait_for_any(define, workflow_clock):
    @define("slow-child")
    def slow(ctx, input):
        ctx.sleep("nap", "2h")
        return "done"

    @define("impatient")
    def impatient(ctx, input):
        child = ctx.start_child("slow-child", {}, id="kid-1")
        outcome = ctx.wait_for_any("first", child=child, timeout=ctx.timer("1h"))
        return {"winner": outcome.key, "value": outcome.value, "child": child.id}

    wf.start("impatient", {}, id="impatient")
    wf.drain()
    workflow_clock.advance("1h")
    wf.drain()
    assert wf.get_status("impatient").output == {
        "winner": "timeout",
        "value": None,
        "child": "kid-1",
    }
    # the parent ended with its child still running: parent_close "cancel" cancelled it
    kid = wf.get_status("kid-1")
    assert kid.status == "cancelled" and "impatient" in kid.error["message"]


def test_a_child_that_ends_before_the_parent_waits_is_still_received(define, workflow_clock):
    @define("quick")
    def quick(ctx, input):
        return input["n"] * 2

    @define("busy-parent")
    def busy(ctx, input):
        handle = ctx.start_child("quick", {"n": 21})
        ctx.sleep("meanwhile", "1h")  # the child runs and ends while the parent sleeps
        return handle.result()

    wf.start("busy-parent", {}, id="busy")
    wf.drain()
    assert wf.get_status("busy/quick#1").status == "completed"
    workflow_clock.advance("1h")
    wf.drain()
    assert wf.get_status("busy").output == 42


@pytest.mark.parametrize(
    "parent_close, child_status, compensated",
    [
        ("cancel", "cancelled", True),
        ("terminate", "cancelled", False),
        ("abandon", "suspended", False),
    ],
)
def test_parent_close_decides_what_becomes_of_a_running_child_when_the_parent_is_undone(
    define, workflow_clock, parent_close, child_status, compensated
):
    undone = []

    @define("booking")
    def booking(ctx, input):
        ctx.step("book", lambda step: "b1", compensate=lambda result, step: undone.append(result))
        ctx.sleep("hold", "1d")

    @define("holiday")
    def holiday(ctx, input):
        ctx.start_child("booking", {}, id="booking-1", parent_close=parent_close)
        ctx.sleep("wait", "1d")

    wf.start("holiday", {}, id="holiday")
    wf.drain()
    assert wf.cancel("holiday", reason="changed plans").accepted
    wf.drain()
    wf.drain()
    assert wf.get_status("holiday").status == "cancelled"
    assert wf.get_status("booking-1").status == child_status
    assert (undone == ["b1"]) is compensated


def test_children_inherit_their_parents_priority_unless_given_one(define, workflow_clock):
    @define("leaf")
    def leaf(ctx, input):
        return None

    @define("root")
    def root(ctx, input):
        ctx.start_child("leaf", {}, id="inherits", parent_close="abandon")
        ctx.start_child("leaf", {}, id="own", priority=7, parent_close="abandon")

    wf.start("root", {}, id="root", priority=3)
    wf.drain()
    assert WorkflowInstance.objects.get(pk="inherits").priority == 3
    assert WorkflowInstance.objects.get(pk="own").priority == 7


def test_an_id_another_workflow_or_parent_uses_fails_the_parent(define, workflow_clock):
    @define("leaf2")
    def leaf(ctx, input):
        return None

    @define("clasher")
    def clasher(ctx, input):
        ctx.execute_child("leaf2", {}, id="taken")

    wf.start("leaf2", {}, id="taken")  # not a child of clasher
    wf.start("clasher", {}, id="clasher")
    wf.drain()
    status = wf.get_status("clasher")
    assert status.status == "failed" and status.error["name"] == "WorkflowIdConflictError"


def test_a_child_deleted_before_it_ended_fails_the_parents_wait(define, workflow_clock):
    @define("stuck")
    def stuck(ctx, input):
        ctx.sleep("forever", "30d")

    @define("waiting-parent")
    def parent(ctx, input):
        try:
            ctx.execute_child("stuck", {}, id="stuck-1")
        except ChildWorkflowFailedError as error:
            return {"cause": error.cause["name"], "status": error.status}

    wf.start("waiting-parent", {}, id="wp")
    wf.drain()
    assert wf.delete("stuck-1", force=True)
    wf.drain()
    assert wf.get_status("wp").output == {"cause": "WorkflowDeletedError", "status": "suspended"}


def test_signal_names_starting_with_a_dollar_are_the_engines():
    with pytest.raises(ValueError, match=r"'\$'"):
        wf.signal("$child", {"status": "completed"}, key="someone")


def test_a_bad_parent_close_fails_the_parent_as_a_definition_error(define, workflow_clock):
    @define("leaf3")
    def leaf(ctx, input):
        return None

    @define("bad-close")
    def bad(ctx, input):
        ctx.start_child("leaf3", {}, parent_close="sometimes")

    wf.start("bad-close", {}, id="bad-close")
    wf.drain()
    assert wf.get_status("bad-close").error["name"] == "WorkflowDefinitionError"
