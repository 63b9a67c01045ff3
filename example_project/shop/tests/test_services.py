"""The stand-in payment, inventory and mail services deduplicate by idempotency key."""

from __future__ import annotations

import pytest
from django.test import override_settings

from django_workflows import NonRetryableStepError
from shop import inventory, mail, payments
from shop.models import Charge, OutgoingMail, Refund, Reservation

from .support import ITEMS, KIBBLE, PATE, stock_of

ORDER = {"id": "f7e1e1eb", "user_id": "u_42", "items": ITEMS, "shipping": "standard", "total": 2499}


def test_a_repeated_charge_key_returns_the_first_charge() -> None:
    first = payments.charge(ORDER, "order-f7e1e1eb:charge-payment")
    again = payments.charge(ORDER, "order-f7e1e1eb:charge-payment")

    assert first == again == {"charge_id": first["charge_id"], "amount": 2499}
    assert Charge.objects.count() == 1


def test_a_declined_card_fails_the_step_for_good_and_stays_declined() -> None:
    order = {**ORDER, "user_id": "u_declined"}
    for _ in range(2):
        with pytest.raises(NonRetryableStepError, match="declined the card for order f7e1e1eb"):
            payments.charge(order, "order-f7e1e1eb:charge-payment")

    assert list(Charge.objects.values_list("status", flat=True)) == ["declined"]


@override_settings(SHOP_CARD_LIMIT=1000)
def test_a_total_over_the_card_limit_is_declined() -> None:
    with pytest.raises(NonRetryableStepError):
        payments.charge(ORDER, "order-f7e1e1eb:charge-payment")


def test_a_repeated_refund_key_refunds_once() -> None:
    charge = payments.charge(ORDER, "order-f7e1e1eb:charge-payment")
    key = "order-f7e1e1eb:$compensate:charge-payment"

    assert payments.refund(charge["charge_id"], key) == payments.refund(charge["charge_id"], key)
    assert Refund.objects.get().amount == 2499


def test_a_repeated_reservation_key_takes_the_stock_once() -> None:
    first = inventory.reserve(ITEMS, "order-f7e1e1eb:reserve-stock")
    again = inventory.reserve(ITEMS, "order-f7e1e1eb:reserve-stock")

    assert first == again == {"reservation_id": "order-f7e1e1eb:reserve-stock"}
    assert stock_of(KIBBLE) == 24


def test_out_of_stock_fails_the_step_for_good_and_takes_nothing() -> None:
    items = [
        {"productId": PATE, "quantity": 2, "price": 1299},
        {"productId": KIBBLE, "quantity": 26, "price": 2499},
    ]
    with pytest.raises(NonRetryableStepError, match=f"{KIBBLE} is out of stock"):
        inventory.reserve(items, "order-f7e1e1eb:reserve-stock")

    assert (stock_of(KIBBLE), stock_of(PATE)) == (25, 40)
    assert not Reservation.objects.exists()


def test_an_unknown_product_is_out_of_stock() -> None:
    with pytest.raises(NonRetryableStepError, match="tuna-treats is out of stock"):
        inventory.reserve([{"productId": "tuna-treats", "quantity": 1, "price": 399}], "key")


def test_a_reservation_is_released_once() -> None:
    reservation = inventory.reserve(ITEMS * 2, "order-f7e1e1eb:reserve-stock")
    assert stock_of(KIBBLE) == 23

    assert inventory.release(reservation["reservation_id"]) is True
    assert inventory.release(reservation["reservation_id"]) is False
    assert stock_of(KIBBLE) == 25


def test_a_repeated_message_id_sends_one_mail() -> None:
    key = "order-f7e1e1eb:send-review-request"
    assert mail.send_review_request(ORDER, key) == mail.send_review_request(ORDER, key)

    sent = OutgoingMail.objects.get()
    assert (sent.message_id, sent.recipient) == (key, "u_42")
