"""A stand-in for the warehouse's stock: the idempotency key is the reservation's primary key,
so a retry finds the reservation it already made."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from django_workflows import NonRetryableStepError

from .models import Reservation, Stock


class OutOfStock(Exception):
    """Raised inside the reservation's transaction to roll back what it took."""


def _quantities(items: list[dict[str, Any]]) -> Counter[str]:
    wanted: Counter[str] = Counter()
    for item in items:
        wanted[item["productId"]] += item["quantity"]
    return wanted


def reserve(items: list[dict[str, Any]], idempotency_key: str) -> dict[str, Any]:
    """Take the items out of stock under the key, once.

    Returns `{"reservation_id"}`. Raises `NonRetryableStepError` when a product is out of stock
    (or unknown), taking nothing.
    """
    if Reservation.objects.filter(pk=idempotency_key).exists():
        return {"reservation_id": idempotency_key}
    try:
        with transaction.atomic():
            for product_id, quantity in sorted(_quantities(items).items()):
                # One conditional statement: never a read followed by a write.
                taken = Stock.objects.filter(product_id=product_id, quantity__gte=quantity).update(
                    quantity=F("quantity") - quantity
                )
                if not taken:
                    raise OutOfStock(product_id)
            Reservation.objects.create(id=idempotency_key, items=items)
    except OutOfStock as error:
        raise NonRetryableStepError(f"{error.args[0]} is out of stock.")
    except IntegrityError:
        # A concurrent attempt with the same key made the reservation; ours rolled back.
        if not Reservation.objects.filter(pk=idempotency_key).exists():
            raise
    return {"reservation_id": idempotency_key}


def release(reservation_id: str) -> bool:
    """Put a reservation's items back in stock, once. Returns whether this call released it."""
    with transaction.atomic():
        released = Reservation.objects.filter(pk=reservation_id, released_at=None).update(
            released_at=timezone.now()
        )
        if not released:
            return False
        reservation = Reservation.objects.get(pk=reservation_id)
        for product_id, quantity in sorted(_quantities(reservation.items).items()):
            Stock.objects.filter(product_id=product_id).update(quantity=F("quantity") + quantity)
    return True
