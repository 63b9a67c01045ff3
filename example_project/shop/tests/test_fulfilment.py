"""The tutorial's order fulfilment, end to end: the shop's services, the engine and the worker."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.apps import apps
from django.db import transaction

import django_workflows
from shop import payments, services
from shop.models import Charge, Order, OutgoingMail, Refund, Reservation
from shop.workflows import fulfilment_id

from .support import ITEMS, KIBBLE, carrier_event, compensations, stock_of


def waits_of(instance):
    return [(wait.signal, wait.key) for wait in instance.waits]


def test_placing_an_order_starts_its_fulfilment(clock) -> None:
    order, fulfilment = services.place_order("u_42", ITEMS)

    assert Order.objects.get().total == 2499
    assert (fulfilment.id, fulfilment.workflow, fulfilment.version) == (
        f"order-{order.id}",
        "order-fulfilment",
        1,
    )
    assert fulfilment.status == "pending"
    assert django_workflows.get_status(fulfilment.id).input == order.as_dict()


def test_the_order_and_its_fulfilment_roll_back_together(place) -> None:
    # The transaction fails after the order's save started the fulfilment: say, the next
    # statement hits a constraint.
    with pytest.raises(RuntimeError, match="violates foreign key constraint"):
        with transaction.atomic():
            order = place()
            # The instance is created in the transaction...
            assert django_workflows.get_status(fulfilment_id(order.id)) is not None
            raise RuntimeError('insert on table "order_lines" violates foreign key constraint')

    # ...and rolled back with it: no order, no fulfilment for the worker to charge.
    assert not Order.objects.exists()
    assert django_workflows.list_instances() == []
    assert django_workflows.drain() == 0
    assert not Charge.objects.exists()


def test_the_fulfilment_charges_reserves_and_waits_for_the_carrier(place, clock) -> None:
    order = place()
    django_workflows.drain()

    instance = django_workflows.get_status(fulfilment_id(order.id))
    assert instance.status == "suspended"
    assert instance.custom_status == "awaiting-delivery"
    assert waits_of(instance) == [
        ("shipment.delivered", order.id),
        ("shipment.returned", order.id),
    ]
    assert instance.wake_at == clock.now() + timedelta(days=3)
    assert Charge.objects.get().amount == 2499
    assert stock_of(KIBBLE) == 24


def test_the_review_is_requested_a_week_after_the_delivery(place, clock) -> None:
    order = place()
    django_workflows.drain()

    services.mark_delivered(carrier_event("shipment.delivered", order.id))
    django_workflows.drain()

    instance = django_workflows.get_status(fulfilment_id(order.id), journal=True)
    assert (instance.status, instance.custom_status) == ("suspended", "delivered")
    assert instance.waits == []
    assert instance.wake_at == clock.now() + timedelta(days=7)
    # The `$stream:` entries are the order page's status lines (ctx.stream("progress")).
    assert [entry.name for entry in instance.journal if not entry.name.startswith("$stream:")] == [
        "charge-payment",
        "reserve-stock",
        "await-delivery",
        "delivered",
        "before-review-request",
    ]
    assert Order.objects.get().status == "delivered"

    clock.advance(timedelta(days=7) - timedelta(seconds=1))
    django_workflows.drain()
    assert not OutgoingMail.objects.exists()  # never early

    clock.advance(timedelta(seconds=1))
    django_workflows.drain()

    instance = django_workflows.get_status(fulfilment_id(order.id))
    assert instance.status == "completed"
    assert instance.output == {
        "charge_id": Charge.objects.get().id,
        "tracking_number": "TRK123456789",
    }
    assert OutgoingMail.objects.get().message_id == f"order-{order.id}:send-review-request"
    assert Charge.objects.count() == 1  # journaled: the replays did not charge again
    assert not Refund.objects.exists()
    assert stock_of(KIBBLE) == 24


def test_a_delivery_reported_before_the_wait_still_counts(place) -> None:
    order = place()
    services.mark_delivered(carrier_event("shipment.delivered", order.id))

    django_workflows.drain()

    instance = django_workflows.get_status(fulfilment_id(order.id))
    assert (instance.status, instance.custom_status) == ("suspended", "delivered")


def test_a_delivery_wakes_only_the_order_it_names(place) -> None:
    first, second = place(), place(user_id="u_7")
    django_workflows.drain()

    services.mark_delivered(carrier_event("shipment.delivered", first.id))
    django_workflows.drain()

    assert django_workflows.get_status(fulfilment_id(first.id)).custom_status == "delivered"
    other = django_workflows.get_status(fulfilment_id(second.id))
    assert other.custom_status == "awaiting-delivery"
    assert waits_of(other) == [
        ("shipment.delivered", second.id),
        ("shipment.returned", second.id),
    ]


def test_compensations_run_in_reverse_when_the_delivery_times_out(place, clock) -> None:
    order = place()
    django_workflows.drain()  # charge, reserve, then park for up to 3 days

    clock.advance(timedelta(days=3))
    django_workflows.drain()  # the wait times out and the compensations run

    instance = django_workflows.get_status(fulfilment_id(order.id), journal=True)
    assert instance.status == "failed"
    assert instance.error["message"] == f"Order {order.id} was not delivered within 3 days."
    # Compensations run in reverse: release the stock, then refund.
    assert compensations(instance) == ["$compensate:reserve-stock", "$compensate:charge-payment"]
    assert Refund.objects.get().idempotency_key == (f"order-{order.id}:$compensate:charge-payment")
    assert stock_of(KIBBLE) == 25
    assert Reservation.objects.get().released_at is not None


def test_a_returned_parcel_refunds_and_releases_the_stock(place) -> None:
    order = place()
    django_workflows.drain()

    services.mark_returned(carrier_event("shipment.returned", order.id))
    django_workflows.drain()

    instance = django_workflows.get_status(fulfilment_id(order.id), journal=True)
    assert instance.status == "failed"
    assert instance.error["message"] == (f"The carrier returned order {order.id} to the warehouse.")
    assert compensations(instance) == ["$compensate:reserve-stock", "$compensate:charge-payment"]
    assert Order.objects.get().status == "returned"
    assert Refund.objects.count() == 1
    assert stock_of(KIBBLE) == 25


def test_support_cancels_an_order_that_waits_for_the_carrier(place) -> None:
    order = place()
    django_workflows.drain()

    result = services.cancel_order(order.id, "Customer ordered the wrong size.")
    assert result.accepted is True
    assert Order.objects.get().status == "cancelled"
    django_workflows.drain()

    instance = django_workflows.get_status(fulfilment_id(order.id), journal=True)
    assert instance.status == "cancelled"
    assert instance.error["message"] == "Customer ordered the wrong size."
    assert instance.custom_status == "awaiting-delivery"  # the stage stays where it was
    steps = {entry.name: entry.status for entry in instance.journal}
    assert steps["await-delivery"] == "cancelled"
    assert compensations(instance) == ["$compensate:reserve-stock", "$compensate:charge-payment"]
    assert Refund.objects.count() == 1
    assert stock_of(KIBBLE) == 25


def test_a_second_cancel_is_refused_and_keeps_the_first_reason(place) -> None:
    order = place()
    django_workflows.drain()
    services.cancel_order(order.id, "Customer ordered the wrong size.")

    assert services.cancel_order(order.id, "Duplicate ticket.").accepted is False
    django_workflows.drain()

    instance = django_workflows.get_status(fulfilment_id(order.id))
    assert instance.error["message"] == "Customer ordered the wrong size."
    assert Refund.objects.count() == 1


def test_a_delivered_order_cannot_be_cancelled(place) -> None:
    order = place()
    django_workflows.drain()
    services.mark_delivered(carrier_event("shipment.delivered", order.id))
    django_workflows.drain()

    with pytest.raises(services.OrderConflict, match="was delivered. Start a return instead."):
        services.cancel_order(order.id, "Changed my mind.")

    instance = django_workflows.get_status(fulfilment_id(order.id))
    assert (instance.status, instance.cancel_requested) == ("suspended", False)
    assert Order.objects.get().status == "delivered"
    assert not Refund.objects.exists()


def test_a_delivery_for_an_unknown_order_stores_no_signal(place) -> None:
    with pytest.raises(services.OrderNotFound, match="Order nope not found."):
        services.mark_delivered(carrier_event("shipment.delivered", "nope"))

    signal_models = [
        model
        for model in apps.get_app_config("django_workflows").get_models()
        if "signal" in model.__name__.lower()
    ]
    assert signal_models
    assert all(not model.objects.exists() for model in signal_models)


def test_a_declined_card_fails_the_order_without_compensating(place) -> None:
    order = place(user_id="u_declined")
    django_workflows.drain()

    instance = django_workflows.get_status(fulfilment_id(order.id), journal=True)
    assert instance.status == "failed"
    assert instance.error["step"] == "charge-payment"
    assert instance.error["cause"]["message"] == (
        f"The payment provider declined the card for order {order.id}."
    )
    assert instance.journal[0].attempt == 1  # not retried
    assert compensations(instance) == []
    assert stock_of(KIBBLE) == 25


def test_out_of_stock_refunds_the_charge(place) -> None:
    order = place(items=[{"productId": KIBBLE, "quantity": 26, "price": 2499}])
    django_workflows.drain()

    instance = django_workflows.get_status(fulfilment_id(order.id), journal=True)
    assert instance.status == "failed"
    assert instance.error["step"] == "reserve-stock"
    assert compensations(instance) == ["$compensate:charge-payment"]
    assert Refund.objects.get().amount == 26 * 2499
    assert stock_of(KIBBLE) == 25


def test_a_payment_provider_outage_is_retried_after_two_seconds(place, clock, monkeypatch) -> None:
    outage = [ConnectionError("The payment provider is unreachable.")]
    create_charge = payments.create_charge

    def flaky_create_charge(order, idempotency_key):
        if outage:
            raise outage.pop()
        return create_charge(order, idempotency_key)

    monkeypatch.setattr(payments, "create_charge", flaky_create_charge)
    order = place()
    django_workflows.drain()

    instance = django_workflows.get_status(fulfilment_id(order.id))
    assert instance.status == "suspended"
    assert instance.wake_at == clock.now() + timedelta(seconds=2)

    clock.advance(timedelta(seconds=2))
    django_workflows.drain()

    instance = django_workflows.get_status(fulfilment_id(order.id), journal=True)
    assert instance.custom_status == "awaiting-delivery"
    assert instance.journal[0].name == "charge-payment"
    assert instance.journal[0].attempt == 2
    assert Charge.objects.count() == 1


def test_the_payment_provider_gets_at_most_ten_requests_a_second(clock) -> None:
    for n in range(12):
        services.place_order(f"u_{n}", ITEMS)

    # Every execution counts toward the rate limit's window: ten start, two wait for the next.
    assert django_workflows.drain() == 10
    assert Charge.objects.count() == 10
    clock.advance("1s")
    assert django_workflows.drain() == 2
    assert Charge.objects.count() == 12


def test_each_fulfilment_counts_toward_its_customers_concurrency_limit(clock) -> None:
    from django_workflows.models import WorkflowInstance

    order, fulfilment = services.place_order("u_42", ITEMS)

    # The key is computed from the input when the fulfilment starts: the customer's id.
    assert WorkflowInstance.objects.get(pk=fulfilment.id).concurrency_key == "u_42"
