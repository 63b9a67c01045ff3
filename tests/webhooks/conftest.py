"""The payment provider's stand-in and the checkout workflow the webhook tests share."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client


class Provider:
    """A payment provider: it takes a callback URL when a payment is created."""

    def __init__(self) -> None:
        self.callbacks: dict[str, str] = {}  # order id -> the URL it will POST to

    def create_payment(self, order_id: str, callback_url: str) -> dict[str, Any]:
        self.callbacks[order_id] = callback_url
        return {"payment_id": f"pay-{order_id}"}


def post(url: str, body: Any = None, *, raw: bytes | None = None, **extra: Any) -> Any:
    """POST `body` as JSON (or the bytes `raw`) to `url` with Django's test client."""
    content_type = extra.pop("content_type", "application/json")
    data = raw if raw is not None else json.dumps(body).encode()
    return Client(**extra.pop("client", {})).post(
        url, data=data, content_type=content_type, **extra
    )


def started(order_id: str = "o1", **options: Any) -> str:
    """Start the checkout `order_id` (its input the id and `options`), run it to its wait."""
    import django_workflows as wf

    wf.start("checkout", {"id": order_id, **options}, id=order_id)
    wf.drain()
    return order_id


@pytest.fixture
def provider() -> Provider:
    return Provider()


@pytest.fixture
def checkout(define, provider):
    """Mints the webhook "paid", hands its URL to the provider in a step, waits for the POST."""

    @define("checkout")
    def checkout(ctx, order):
        hook = ctx.webhook("paid")
        ctx.step("create-payment", lambda step: provider.create_payment(order["id"], hook.url))
        if order.get("sleep"):
            ctx.sleep("settle", order["sleep"])
        body = hook.wait(timeout=order.get("timeout"))
        return {"body": body, "token": hook.token, "url": hook.url}

    return checkout
