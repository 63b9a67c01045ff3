"""What the shop's tests share: the products, an order's items, the carrier's events."""

from __future__ import annotations

from typing import Any

from shop.models import Stock

KIBBLE = "salmon-kibble-2kg"
PATE = "chicken-pate-12x85g"
ITEMS = [{"productId": KIBBLE, "quantity": 1, "price": 2499}]


def carrier_event(
    kind: str, order_id: str, tracking_number: str = "TRK123456789"
) -> dict[str, Any]:
    """The body the carrier POSTs to the webhook."""
    return {
        "type": kind,
        "reference": order_id,
        "trackingNumber": tracking_number,
        "occurredAt": "2026-01-02T14:05:00Z",
    }


def stock_of(product_id: str) -> int:
    """How many units of the product the warehouse has left."""
    return Stock.objects.get(pk=product_id).quantity


def compensations(instance: Any) -> list[str]:
    """The names of the compensations in an instance's journal, in the order they ran."""
    return [entry.name for entry in instance.journal if entry.kind == "compensation"]
