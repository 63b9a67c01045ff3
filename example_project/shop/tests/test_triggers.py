"""The shop's Django signals drive the fulfilment: a new order's post_save starts it, and the
carrier's reports, saved as deliveries, reach it through the shop's `carrier_reported`."""

from __future__ import annotations

import json
from typing import Any

import django_workflows
from django_workflows.models import Signal, WorkflowInstance
from shop import services
from shop.models import Delivery, Order
from shop.workflows import fulfilment_id

from .support import ITEMS, carrier_event


def post(client: Any, url: str, body: Any) -> Any:
    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_saving_a_new_order_anywhere_starts_its_fulfilment(clock) -> None:
    # Not through the service: any code that saves an order starts it (no start() to forget).
    order = Order.objects.create(user_id="u_7", items=ITEMS, total=2499)

    instance = django_workflows.get_status(fulfilment_id(order.id))
    assert (instance.workflow, instance.status, instance.input) == (
        "order-fulfilment",
        "pending",
        order.as_dict(),
    )


def test_saving_the_order_again_starts_nothing_more(place) -> None:
    order = place()
    order.status = Order.Status.CANCELLED
    order.save()

    assert WorkflowInstance.objects.count() == 1
    assert django_workflows.get_status(fulfilment_id(order.id)).input["status"] == "placed"


def test_the_webhook_saves_a_delivery_that_wakes_the_fulfilment(client, place, clock) -> None:
    order = place()
    django_workflows.drain()

    response = post(client, "/webhooks/carrier", carrier_event("shipment.delivered", order.id))
    assert response.status_code == 200

    delivery = Delivery.objects.get()
    assert (delivery.order_id, delivery.kind, delivery.tracking_number) == (
        order.id,
        "delivered",
        "TRK123456789",
    )
    django_workflows.drain()
    instance = django_workflows.get_status(fulfilment_id(order.id))
    assert instance.custom_status == "delivered"


def test_a_retried_webhook_stores_one_delivery_and_one_signal(client, place, clock) -> None:
    order = place()
    django_workflows.drain()

    for _ in range(2):
        post(client, "/webhooks/carrier", carrier_event("shipment.delivered", order.id))

    assert Delivery.objects.count() == 1
    stored = Signal.objects.get(name="shipment.delivered")
    assert (stored.key, stored.dedupe_id) == (order.id, f"{order.id}:TRK123456789")


def test_a_return_sends_the_returned_signal_only(place) -> None:
    order = place()
    django_workflows.drain()
    services.mark_returned(carrier_event("shipment.returned", order.id))

    assert list(Signal.objects.values_list("name", flat=True)) == ["shipment.returned"]
    django_workflows.drain()
    assert django_workflows.get_status(fulfilment_id(order.id)).status == "failed"


def test_the_fulfilment_is_about_its_order_tagged_and_searchable_by_total(place) -> None:
    express = place(shipping="express")
    standard = place(items=[{"productId": "salmon-kibble-2kg", "quantity": 3, "price": 2499}])

    status = django_workflows.get_status(fulfilment_id(express.id))
    assert status.subject == f"shop.order:{express.id}"
    assert status.tags == ["express"]
    assert status.attributes == {"total": express.total}
    assert django_workflows.get_status(fulfilment_id(standard.id)).tags == []

    assert [s.id for s in django_workflows.list_instances(subject=express)] == [
        fulfilment_id(express.id)
    ]
    assert [s.id for s in django_workflows.list_instances(tag="express")] == [
        fulfilment_id(express.id)
    ]
    big = django_workflows.list_instances(attributes={"total__gt": express.total})
    assert [s.id for s in big] == [fulfilment_id(standard.id)]
