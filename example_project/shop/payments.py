"""A stand-in for the payment provider's API: it answers a repeated idempotency key with the
first response, so a retried step never charges the card twice."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from django_workflows import NonRetryableStepError

from .models import Charge, Refund

DECLINED_USER = "u_declined"


def _card_declined(order: dict[str, Any]) -> bool:
    limit = getattr(settings, "SHOP_CARD_LIMIT", 100_000)
    return order["user_id"] == DECLINED_USER or order["total"] > limit


def create_charge(order: dict[str, Any], idempotency_key: str) -> Charge:
    """Charge the order's total once per key; a repeated key returns the first charge."""
    existing = Charge.objects.filter(idempotency_key=idempotency_key).first()
    if existing is not None:
        return existing
    status = Charge.Status.DECLINED if _card_declined(order) else Charge.Status.SUCCEEDED
    try:
        with transaction.atomic():
            return Charge.objects.create(
                id=f"ch_{secrets.token_hex(8)}",
                idempotency_key=idempotency_key,
                reference=order["id"],
                amount=order["total"],
                status=status,
            )
    except IntegrityError:
        # Another attempt with the same key got there first: answer with its charge.
        return Charge.objects.get(idempotency_key=idempotency_key)


def charge(order: dict[str, Any], idempotency_key: str) -> dict[str, Any]:
    """Charge the customer's card for the order.

    Returns `{"charge_id", "amount"}`. Raises `NonRetryableStepError` when the card is declined:
    retrying won't help.
    """
    result = create_charge(order, idempotency_key)
    if result.status == Charge.Status.DECLINED:
        raise NonRetryableStepError(
            f"The payment provider declined the card for order {order['id']}."
        )
    return {"charge_id": result.id, "amount": result.amount}


def refund(charge_id: str, idempotency_key: str) -> dict[str, Any]:
    """Refund a charge in full, once per key. Raises `Charge.DoesNotExist` for an unknown charge."""
    existing = Refund.objects.filter(idempotency_key=idempotency_key).first()
    if existing is None:
        charged = Charge.objects.get(pk=charge_id)
        try:
            with transaction.atomic():
                existing = Refund.objects.create(
                    id=f"re_{secrets.token_hex(8)}",
                    idempotency_key=idempotency_key,
                    charge=charged,
                    amount=charged.amount,
                )
        except IntegrityError:
            existing = Refund.objects.get(idempotency_key=idempotency_key)
    return {"refund_id": existing.id, "amount": existing.amount}
