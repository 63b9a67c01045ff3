"""The shop's JSON endpoints answer in the tutorial's shapes."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

import django_workflows
from shop.models import Order

from .support import ITEMS, carrier_event


def post(client: Any, url: str, body: Any) -> Any:
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(url, data=data, content_type="application/json")


@pytest.fixture
def order_id(client: Any, clock: Any) -> str:
    """An order placed through `POST /orders`, charged, reserved and waiting for the carrier."""
    response = post(client, "/orders", {"user_id": "u_42", "items": ITEMS})
    assert response.status_code == 201
    django_workflows.drain()
    return response.json()["id"]


def test_placing_an_order_answers_the_order_and_its_fulfilment(client, clock) -> None:
    items = [*ITEMS, {"productId": "chicken-pate-12x85g", "quantity": 2, "price": 1299}]
    response = post(client, "/orders", {"user_id": "u_42", "items": items, "shipping": "express"})

    assert response.status_code == 201
    body = response.json()
    assert body == {
        "id": body["id"],
        "user_id": "u_42",
        "items": items,
        "shipping": "express",
        "total": 2499 + 2 * 1299,
        "status": "placed",
        "fulfilment": {
            "id": f"order-{body['id']}",
            "workflow": "order-fulfilment",
            "version": 1,
            "status": "pending",
        },
    }
    assert len(body["id"]) == 8
    assert Order.objects.get().id == body["id"]


def test_shipping_is_standard_unless_the_order_says_otherwise(client, clock) -> None:
    response = post(client, "/orders", {"user_id": "u_42", "items": ITEMS})

    assert response.json()["shipping"] == "standard"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{not json", "The request body is not valid JSON"),
        ([], "The request body must be a JSON object."),
        ({"items": ITEMS}, "user_id must be a non-empty string."),
        ({"user_id": "u_42", "items": []}, "items must be a non-empty list."),
        ({"user_id": "u_42", "items": ["kibble"]}, "items[0] must be an object."),
        (
            {"user_id": "u_42", "items": [{"quantity": 1, "price": 2499}]},
            "items[0].productId must be a non-empty string.",
        ),
        (
            {"user_id": "u_42", "items": [{**ITEMS[0], "quantity": 0}]},
            "items[0].quantity must be an integer of at least 1.",
        ),
        (
            {"user_id": "u_42", "items": [{**ITEMS[0], "price": "24.99"}]},
            "items[0].price must be an integer of at least 0.",
        ),
        (
            {"user_id": "u_42", "items": ITEMS, "shipping": "overnight"},
            "shipping must be 'standard' or 'express'.",
        ),
    ],
)
def test_a_bad_order_is_refused_naming_the_field(client, clock, body, message) -> None:
    response = post(client, "/orders", body)

    assert response.status_code == 400
    assert response.json()["message"].startswith(message)
    assert not Order.objects.exists()
    assert django_workflows.list_instances() == []


def test_the_fulfilment_view_shows_the_wait_for_the_carrier(client, order_id) -> None:
    response = client.get(f"/orders/{order_id}/fulfilment")

    assert response.status_code == 200
    assert response.json() == {
        "status": "suspended",
        "stage": "awaiting-delivery",
        "waitingFor": ["shipment.delivered", "shipment.returned"],
        "wakeAt": "2026-01-04T00:00:00.000Z",
        "steps": {
            "charge-payment": "completed",
            "reserve-stock": "completed",
            "await-delivery": "pending",
        },
        "error": None,
    }


def test_the_fulfilment_view_shows_the_sleep_after_the_delivery(client, order_id) -> None:
    response = post(client, "/webhooks/carrier", carrier_event("shipment.delivered", order_id))
    assert (response.status_code, response.json()) == (200, {"received": True})
    django_workflows.drain()

    assert client.get(f"/orders/{order_id}/fulfilment").json() == {
        "status": "suspended",
        "stage": "delivered",
        "waitingFor": [],
        "wakeAt": "2026-01-08T00:00:00.000Z",
        "steps": {
            "charge-payment": "completed",
            "reserve-stock": "completed",
            "await-delivery": "completed",
            "delivered": "completed",
            "before-review-request": "pending",
        },
        "error": None,
    }


def test_the_fulfilment_of_an_unknown_order_is_not_found(client) -> None:
    response = client.get("/orders/nope/fulfilment")

    assert response.status_code == 404
    assert response.json() == {
        "message": "Order nope not found.",
        "error": "Not Found",
        "statusCode": 404,
    }


def test_a_returned_parcel_is_reported_through_the_webhook(client, order_id) -> None:
    response = post(client, "/webhooks/carrier", carrier_event("shipment.returned", order_id))
    assert response.json() == {"received": True}
    django_workflows.drain()

    view = client.get(f"/orders/{order_id}/fulfilment").json()
    assert view["status"] == "failed"
    assert view["error"] == f"The carrier returned order {order_id} to the warehouse."
    assert Order.objects.get().status == "returned"


def test_other_carrier_events_are_received_and_change_nothing(client, order_id) -> None:
    response = post(client, "/webhooks/carrier", carrier_event("shipment.in_transit", order_id))
    assert response.json() == {"received": True}
    django_workflows.drain()

    assert client.get(f"/orders/{order_id}/fulfilment").json()["stage"] == "awaiting-delivery"
    assert Order.objects.get().status == "placed"


def test_a_delivery_for_an_unknown_order_is_not_found(client) -> None:
    response = post(client, "/webhooks/carrier", carrier_event("shipment.delivered", "nope"))

    assert response.status_code == 404
    assert response.json()["message"] == "Order nope not found."


def test_a_delivery_without_a_tracking_number_is_refused(client, order_id) -> None:
    event = carrier_event("shipment.delivered", order_id)
    del event["trackingNumber"]
    response = post(client, "/webhooks/carrier", event)

    assert response.status_code == 400
    assert response.json()["message"] == "trackingNumber must be a non-empty string."
    assert Order.objects.get().status == "placed"


def test_support_cancels_an_order_through_the_api(client, order_id) -> None:
    response = post(
        client, f"/orders/{order_id}/cancel", {"reason": "Customer ordered the wrong size."}
    )
    assert (response.status_code, response.json()) == (202, {"accepted": True})
    django_workflows.drain()

    assert client.get(f"/orders/{order_id}/fulfilment").json() == {
        "status": "cancelled",
        "stage": "awaiting-delivery",
        "waitingFor": [],
        "wakeAt": None,
        "steps": {
            "charge-payment": "completed",
            "reserve-stock": "completed",
            "await-delivery": "cancelled",
            "$compensate:reserve-stock": "completed",
            "$compensate:charge-payment": "completed",
        },
        "error": "Customer ordered the wrong size.",
    }
    again = post(client, f"/orders/{order_id}/cancel", {"reason": "Again."})
    assert (again.status_code, again.json()) == (202, {"accepted": False})


def test_a_delivered_order_cannot_be_cancelled_through_the_api(client, order_id) -> None:
    post(client, "/webhooks/carrier", carrier_event("shipment.delivered", order_id))

    response = post(client, f"/orders/{order_id}/cancel", {"reason": "Changed my mind."})

    assert response.status_code == 409
    assert response.json() == {
        "message": f"Order {order_id} was delivered. Start a return instead.",
        "error": "Conflict",
        "statusCode": 409,
    }


def test_cancelling_an_unknown_order_is_not_found(client) -> None:
    response = post(client, "/orders/nope/cancel", {"reason": "Changed my mind."})

    assert response.status_code == 404


def test_the_index_page_lists_the_orders_with_their_fulfilment(client, order_id) -> None:
    response = client.get("/")

    assert response.status_code == 200
    assert order_id in response.content.decode()
    assert "awaiting-delivery" in response.content.decode()


def test_placing_an_order_takes_a_post(client) -> None:
    assert client.get("/orders").status_code == 405


def events(client: Any, order_id: str, **headers: str) -> str:
    response = client.get(f"/orders/{order_id}/events", headers=headers)
    assert response["Content-Type"] == "text/event-stream"
    return b"".join(response.streaming_content).decode()


def test_the_order_page_follows_the_fulfilments_status_lines(client, order_id, clock) -> None:
    page = client.get(f"/orders/{order_id}").content.decode()
    assert f'new EventSource("/orders/{order_id}/events")' in page

    post(client, "/webhooks/carrier", carrier_event("shipment.delivered", order_id))
    django_workflows.drain()
    clock.advance(timedelta(days=7))
    django_workflows.drain()

    assert events(client, order_id) == (
        'id: 1\ndata: {"line":"Payment received."}\n\n'
        'id: 2\ndata: {"line":"Stock reserved; waiting for the carrier."}\n\n'
        'id: 3\ndata: {"line":"Delivered (TRK123456789)."}\n\n'
        'id: 4\ndata: {"line":"We asked for your review."}\n\n'
        "event: end\ndata: {}\n\n"
    )
    # A browser that reconnects resumes after the last line it saw.
    assert events(client, order_id, **{"Last-Event-ID": "3"}).startswith("id: 4\n")


def test_an_unknown_orders_page_and_events_are_not_found(client) -> None:
    assert client.get("/orders/nope").status_code == 404
    assert client.get("/orders/nope/events").status_code == 404
