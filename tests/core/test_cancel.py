"""Cancel and terminate, as customer support uses them."""

from __future__ import annotations

import pytest

import django_workflows as wf
from tests.core.helpers import journal, order
from tests.testapp.workflows import fulfilment_id

pytestmark = pytest.mark.django_db

ID = fulfilment_id("71e1973d")


def waiting_for_the_carrier():
    wf.start("order-fulfilment", order(), id=ID)
    assert wf.drain() == 1
    assert wf.get_status(ID).status == "suspended"


def test_cancel_while_waiting_compensates_and_ends_cancelled(world, workflow_clock):
    waiting_for_the_carrier()
    result = wf.cancel(ID, "The customer changed their mind.")
    assert result.accepted is True
    assert result.instance.id == ID
    assert result.instance.cancel_requested is True
    assert wf.drain() == 1  # a parked instance wakes at once
    status = wf.get_status(ID, journal=True)
    assert status.status == "cancelled"
    assert status.error == {
        "name": "WorkflowCancelledError",
        "message": "The customer changed their mind.",
    }
    assert journal(ID) == [
        ("charge-payment", "step", "completed"),
        ("reserve-stock", "step", "completed"),
        ("await-delivery", "wait", "cancelled"),
        ("$compensate:reserve-stock", "compensation", "completed"),
        ("$compensate:charge-payment", "compensation", "completed"),
    ]
    assert world.stock["kibble"] == 25
    assert list(world.refunds.values()) == ["ch_1"]
    assert status.custom_status == "awaiting-delivery"


def test_a_second_cancel_is_not_accepted_and_the_first_reason_is_kept(world, workflow_clock):
    waiting_for_the_carrier()
    assert wf.cancel(ID, "first reason").accepted is True
    second = wf.cancel(ID, "second reason")
    assert second.accepted is False
    wf.drain()
    assert wf.get_status(ID).error["message"] == "first reason"


def test_cancel_of_a_pending_instance_runs_nothing(world, workflow_clock):
    wf.start("order-fulfilment", order(), id=ID)
    assert wf.cancel(ID, "too late").accepted is True
    wf.drain()
    status = wf.get_status(ID)
    assert status.status == "cancelled"
    assert status.error == {"name": "WorkflowCancelledError", "message": "too late"}
    assert world.calls == []


def test_cancel_after_the_commit_refunds_nothing_and_stops_the_review(world, workflow_clock):
    waiting_for_the_carrier()
    wf.signal("shipment.delivered", {"trackingNumber": "TRK1"}, key="71e1973d")
    wf.drain()
    assert wf.get_status(ID).custom_status == "delivered"
    assert wf.cancel(ID, "Support cancelled it by mistake.").accepted is True
    wf.drain()
    status = wf.get_status(ID)
    assert status.status == "cancelled"
    assert status.error["name"] == "WorkflowCancelledError"
    assert world.refunds == {} and world.released == []
    assert not [n for n, kind, _ in journal(ID) if kind == "compensation"]
    workflow_clock.advance("7d")
    wf.drain()
    assert world.mails == {}


def test_cancel_before_the_delivery_is_consumed_still_refunds(world, workflow_clock):
    waiting_for_the_carrier()
    wf.signal("shipment.delivered", {"trackingNumber": "TRK1"}, key="71e1973d")
    assert wf.cancel(ID, "cancelled first").accepted is True
    wf.drain()
    status = wf.get_status(ID)
    assert status.status == "cancelled"
    assert list(world.refunds.values()) == ["ch_1"]


def test_terminate_stops_without_compensating(world, workflow_clock):
    waiting_for_the_carrier()
    result = wf.terminate(ID)
    assert result.accepted is True
    wf.drain()
    status = wf.get_status(ID)
    assert status.status == "cancelled"
    assert status.error == {"name": "WorkflowTerminatedError", "message": "Terminated."}
    assert not [n for n, kind, _ in journal(ID) if kind == "compensation"]
    assert world.refunds == {} and world.released == []


def test_terminate_with_a_reason_uses_it_as_the_message(world, workflow_clock):
    waiting_for_the_carrier()
    wf.terminate(ID, "Refunded by hand after a chargeback.")
    wf.drain()
    assert wf.get_status(ID).error == {
        "name": "WorkflowTerminatedError",
        "message": "Refunded by hand after a chargeback.",
    }


def test_terminate_is_accepted_after_a_cancel_and_replaces_it(world, workflow_clock):
    waiting_for_the_carrier()
    assert wf.cancel(ID, "cancel").accepted is True
    assert wf.terminate(ID, "terminate").accepted is True
    wf.drain()
    status = wf.get_status(ID)
    assert status.status == "cancelled"
    assert status.error == {"name": "WorkflowTerminatedError", "message": "terminate"}
    assert world.refunds == {}


def test_a_cancel_after_a_terminate_is_refused(world, workflow_clock):
    waiting_for_the_carrier()
    assert wf.terminate(ID).accepted is True
    assert wf.cancel(ID, "cancel").accepted is False
    assert wf.terminate(ID).accepted is False
    wf.drain()
    assert wf.get_status(ID).error["name"] == "WorkflowTerminatedError"


def test_cancel_of_an_unknown_id_raises_not_found():
    with pytest.raises(wf.WorkflowNotFoundError) as raised:
        wf.cancel("order-nobody", "why")
    assert raised.value.status_code == 404
    with pytest.raises(wf.WorkflowNotFoundError):
        wf.terminate("order-nobody")


def test_cancel_of_a_finished_instance_is_not_accepted(world, workflow_clock):
    wf.start("wait-once", {}, id="done")
    wf.signal("ping", {"n": 1})
    wf.drain()
    result = wf.cancel("done", "late")
    assert result.accepted is False
    assert result.instance.status == "completed"
    assert wf.terminate("done").accepted is False
    assert wf.get_status("done").error is None


def test_cancel_of_a_compensating_instance_is_not_accepted(world, workflow_clock):
    world.failures["release"] = 1  # the undo parks for its retry
    waiting_for_the_carrier()
    workflow_clock.advance("3d")
    wf.drain()
    status = wf.get_status(ID)
    assert status.status == "compensating"
    assert wf.cancel(ID, "cancel").accepted is False
    workflow_clock.advance("1s")
    wf.drain()
    status = wf.get_status(ID)
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowFailedError"


def test_a_running_instance_finishes_its_step_and_stops_at_its_next_ctx_call(world, workflow_clock):
    from django_workflows import workflow
    from django_workflows.engine.registry import registry

    def charge_then_cancel(step):
        charge = world.charge(order(), step.idempotency_key)
        assert wf.cancel("running", "cancelled mid-step").accepted is True
        return charge

    @workflow("cancelled-mid-step")
    def cancelled_mid_step(ctx, input):
        ctx.step(
            "charge-payment",
            charge_then_cancel,
            compensate=lambda charge, step: world.refund(charge["charge_id"], step.idempotency_key),
        )
        ctx.step(
            "reserve-stock", lambda step: world.reserve(order()["items"], step.idempotency_key)
        )

    try:
        wf.start("cancelled-mid-step", None, id="running")
        wf.drain()
    finally:
        registry.unregister(cancelled_mid_step)
    status = wf.get_status("running", journal=True)
    assert status.status == "cancelled"
    assert status.error == {"name": "WorkflowCancelledError", "message": "cancelled mid-step"}
    entries = {e.name: e.status for e in status.journal}
    assert entries["charge-payment"] == "completed"  # the running step finished
    assert entries["$compensate:charge-payment"] == "completed"
    assert entries.get("reserve-stock") in (None, "cancelled")  # the next ctx call stopped it
    assert not [call for call in world.calls if call[0] == "reserve"]
    assert list(world.refunds.values()) == ["ch_1"]
