from __future__ import annotations

import pytest

import django_workflows as wf
from tests.testapp.workflows import fulfilment_id

pytestmark = pytest.mark.django_db


def order(id="71e1973d", user_id="u_42", quantity=1):
    return {
        "id": id,
        "user_id": user_id,
        "items": [{"product": "kibble", "quantity": quantity}],
        "total": 2499,
    }


def test_delivery_then_review_after_seven_days(world, workflow_clock):
    started = wf.start("order-fulfilment", order(), id=fulfilment_id("71e1973d"))
    assert started.created and started.status == "pending"
    assert wf.drain() == 1
    status = wf.get_status(fulfilment_id("71e1973d"), journal=True)
    assert status.status == "suspended", status.error
    assert status.custom_status == "awaiting-delivery"
    assert [(w.signal, w.key) for w in status.waits] == [
        ("shipment.delivered", "71e1973d"),
        ("shipment.returned", "71e1973d"),
    ]
    wf.signal("shipment.delivered", {"trackingNumber": "TRK1"}, key="71e1973d")
    assert wf.drain() == 1
    status = wf.get_status(fulfilment_id("71e1973d"), journal=True)
    assert status.status == "suspended"
    assert status.custom_status == "delivered"
    workflow_clock.advance("7d")
    assert wf.drain() == 1
    status = wf.get_status(fulfilment_id("71e1973d"), journal=True)
    assert status.status == "completed", status.error
    assert status.output == {"charge_id": "ch_1", "tracking_number": "TRK1"}
    assert len(world.mails) == 1
