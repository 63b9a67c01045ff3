"""A stand-in for the mail provider: the idempotency key is the message id, so a retried step
sends the message once."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from .models import OutgoingMail


def send_review_request(order: dict[str, Any], idempotency_key: str) -> dict[str, Any]:
    """Ask the customer to review the order. Returns `{"message_id"}`."""
    try:
        with transaction.atomic():
            OutgoingMail.objects.get_or_create(
                message_id=idempotency_key,
                defaults={
                    "recipient": order["user_id"],
                    "subject": "How did your cat like it?",
                    "body": (
                        f"Your order {order['id']} arrived a week ago. "
                        "Tell other cat owners what you think of it."
                    ),
                },
            )
    except IntegrityError:
        pass  # a concurrent attempt with the same message id sent it
    return {"message_id": idempotency_key}
