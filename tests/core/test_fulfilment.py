"""The tutorial's order fulfilment, end to end."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction

import django_workflows as wf
from django_workflows.models import Signal
from tests.core.helpers import journal, names, order
from tests.testapp.models import Ledger
from tests.testapp.workflows import fulfilment_id

pytestmark = pytest.mark.django_db

ID = fulfilment_id("71e1973d")


def place(items=None):
    """OrdersService.place(): the order row and the fulfilment in one transaction."""
    with transaction.atomic():
        Ledger.objects.create(order_id="71e1973d", total=2499)
        return wf.start("order-fulfilment", order(items=items), id=ID)


def test_placing_an_order_charges_reserves_and_waits_for_the_carrier(world, workflow_clock):
    place()
    assert wf.drain() == 1
    status = wf.get_status(ID, journal=True)
    assert status.status == "suspended"
    assert status.custom_status == "awaiting-delivery"
    assert status.wake_at == workflow_clock.now() + timedelta(days=3)
    assert {w.signal for w in status.waits} == {"shipment.delivered", "shipment.returned"}
    assert [(e.name, e.status) for e in status.journal] == [
        ("charge-payment", "completed"),
        ("reserve-stock", "completed"),
        ("await-delivery", "pending"),
    ]
    assert world.charges == {f"{ID}:charge-payment": {"charge_id": "ch_1", "amount": 2499}}
    assert list(world.reservations) == [f"{ID}:reserve-stock"]
    assert world.stock["kibble"] == 24


def test_no_delivery_within_three_days_fails_the_order_and_compensates_in_reverse(
    world, workflow_clock
):
    place()
    wf.drain()
    workflow_clock.advance("3d")
    assert wf.drain() == 1
    status = wf.get_status(ID, journal=True)
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowFailedError"
    assert status.error["message"] == "Order 71e1973d was not delivered within 3 days."
    compensations = [(e.name, e.kind, e.status) for e in status.journal if e.kind == "compensation"]
    assert compensations == [
        ("$compensate:reserve-stock", "compensation", "completed"),
        ("$compensate:charge-payment", "compensation", "completed"),
    ]
    undo = [call for call in world.calls if call[0] in ("release", "refund")]
    assert undo == [
        ("release", f"{ID}:reserve-stock"),
        ("refund", f"{ID}:$compensate:charge-payment"),
    ]
    assert world.stock["kibble"] == 25
    assert status.custom_status == "awaiting-delivery"  # a status no longer changed stays


def test_a_compensation_has_its_own_idempotency_key(world, workflow_clock):
    place()
    wf.drain()
    workflow_clock.advance("3d")
    wf.drain()
    assert world.refunds == {f"{ID}:$compensate:charge-payment": "ch_1"}


def test_delivery_then_the_review_request_after_seven_days(world, workflow_clock):
    place()
    wf.drain()
    workflow_clock.advance("1d")
    wf.signal("shipment.delivered", {"trackingNumber": "TRK1"}, key="71e1973d")
    assert wf.drain() == 1
    status = wf.get_status(ID)
    assert status.status == "suspended"
    assert status.custom_status == "delivered"
    assert status.waits == []
    assert status.wake_at == workflow_clock.now() + timedelta(days=7)

    workflow_clock.advance(timedelta(days=7) - timedelta(seconds=1))
    assert wf.drain() == 0  # never early
    assert world.mails == {}

    workflow_clock.advance("1s")
    assert wf.drain() == 1
    status = wf.get_status(ID, journal=True)
    assert status.status == "completed", status.error
    assert status.output == {"charge_id": "ch_1", "tracking_number": "TRK1"}
    assert world.mails == {f"{ID}:send-review-request": "u_42"}
    assert world.refunds == {} and world.released == []
    assert [(e.name, e.kind) for e in status.journal] == [
        ("charge-payment", "step"),
        ("reserve-stock", "step"),
        ("await-delivery", "wait"),
        ("delivered", "commit"),
        ("before-review-request", "sleep"),
        ("send-review-request", "step"),
    ]
    assert world.calls.count(("charge", f"{ID}:charge-payment")) == 1  # replays never charge again


def test_the_webhook_marks_the_order_delivered_and_signals_in_one_transaction(
    world, workflow_clock
):
    place()
    wf.drain()
    with pytest.raises(LookupError), transaction.atomic():
        Ledger.objects.filter(order_id="71e1973d").update(total=0)
        wf.signal("shipment.delivered", {"trackingNumber": "TRK1"}, key="71e1973d")
        raise LookupError("the order is unknown: 404")
    assert Signal.objects.count() == 0
    assert wf.drain() == 0
    assert wf.get_status(ID).status == "suspended"
    with transaction.atomic():
        Ledger.objects.filter(order_id="71e1973d").update(total=1)
        wf.signal("shipment.delivered", {"trackingNumber": "TRK1"}, key="71e1973d")
    assert wf.drain() == 1
    assert wf.get_status(ID).custom_status == "delivered"


def test_a_returned_parcel_fails_the_order_releases_the_stock_and_refunds(world, workflow_clock):
    place()
    wf.drain()
    wf.signal("shipment.returned", {"trackingNumber": "TRK1"}, key="71e1973d")
    assert wf.drain() == 1
    status = wf.get_status(ID)
    assert status.status == "failed"
    assert status.error["message"] == "The carrier returned order 71e1973d to the warehouse."
    assert world.stock["kibble"] == 25
    assert list(world.refunds.values()) == ["ch_1"]
    assert "delivered" not in names(ID)


def test_a_return_reported_after_the_delivery_does_not_undo_the_order(world, workflow_clock):
    place()
    wf.drain()
    wf.signal("shipment.delivered", {"trackingNumber": "TRK1"}, key="71e1973d")
    wf.signal("shipment.returned", {"trackingNumber": "TRK1"}, key="71e1973d")
    wf.drain()
    status = wf.get_status(ID)
    assert status.status == "suspended"
    assert status.custom_status == "delivered"
    assert world.refunds == {}


def test_out_of_stock_fails_the_order_and_refunds_the_charge(world, workflow_clock):
    place(items=[{"product": "mouse-toy", "quantity": 10}])
    assert wf.drain() == 1
    status = wf.get_status(ID)
    assert status.status == "failed"
    assert status.error["name"] == "StepFailedError"
    assert status.error["step"] == "reserve-stock"
    assert status.error["cause"] == {
        "name": "NonRetryableStepError",
        "message": "mouse-toy is out of stock.",
    }
    assert [n for n, kind, _ in journal(ID) if kind == "compensation"] == [
        "$compensate:charge-payment"
    ]
    assert list(world.refunds.values()) == ["ch_1"]
    assert world.released == []
    assert world.stock["mouse-toy"] == 3


def test_the_status_shows_paid_while_the_reservation_waits_for_a_retry(world, workflow_clock):
    world.failures["reserve"] = 1
    place()
    assert wf.drain() == 1
    status = wf.get_status(ID)
    assert status.status == "suspended"
    assert status.custom_status == "paid"
    workflow_clock.advance("1s")
    wf.drain()
    assert wf.get_status(ID).custom_status == "awaiting-delivery"


def test_a_charge_retried_after_a_network_error_charges_once(world, workflow_clock):
    world.failures["charge"] = 1
    place()
    wf.drain()
    assert wf.get_status(ID).wake_at == workflow_clock.now() + timedelta(seconds=2)
    workflow_clock.advance("2s")
    wf.drain()
    assert wf.get_status(ID).custom_status == "awaiting-delivery"
    assert len(world.charges) == 1


def test_a_refund_that_gives_up_ends_the_order_as_compensation_failed(
    world, workflow_clock, events
):
    world.failures["refund"] = 100
    place()
    wf.drain()
    workflow_clock.advance("3d")
    for _ in range(5):  # the refund's attempts, with their backoff
        wf.drain()
        workflow_clock.advance("1m")
    status = wf.get_status(ID, journal=True)
    assert status.status == "compensation_failed"
    assert status.error["name"] == "WorkflowFailedError"  # the original failure
    assert status.error["message"] == "Order 71e1973d was not delivered within 3 days."
    assert status.error["compensation"]["name"] == "ConnectionError"
    assert status.error["compensation"]["step"] == "charge-payment"
    assert status.error["compensation"]["attempts"] == 3  # the RETRY setting's default
    [needs_a_person] = [e for e in events if e.type == "workflow-compensation-failed"]
    assert needs_a_person.data["error"]["compensation"]["step"] == "charge-payment"
    statuses = {e.name: e.status for e in status.journal}
    assert statuses["$compensate:reserve-stock"] == "completed"
    assert statuses["$compensate:charge-payment"] == "failed"


def test_a_delivery_recorded_after_the_three_days_loses_to_the_timeout(world, workflow_clock):
    place()
    wf.drain()
    workflow_clock.advance(timedelta(days=3, seconds=1))  # no worker ran at the deadline
    wf.signal("shipment.delivered", {"trackingNumber": "TRK1"}, key="71e1973d")
    wf.drain()
    status = wf.get_status(ID)
    assert status.status == "failed"
    assert status.error["message"] == "Order 71e1973d was not delivered within 3 days."
    assert list(world.refunds.values()) == ["ch_1"]
