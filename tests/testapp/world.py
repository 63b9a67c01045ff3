"""Stand-ins for the outside world the tests' workflows call: they deduplicate by idempotency key
like the real systems, and record every request so tests can count them."""

from __future__ import annotations

import threading
from typing import Any

from django_workflows import NonRetryableStepError


class World:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.charges: dict[str, dict[str, Any]] = {}
        self.refunds: dict[str, str] = {}
        self.reservations: dict[str, list[dict[str, Any]]] = {}
        self.released: list[str] = []
        self.stock: dict[str, int] = {"kibble": 25, "litter": 10, "mouse-toy": 3}
        self.mails: dict[str, str] = {}
        self.calls: list[tuple[str, str]] = []
        self.failures: dict[str, int] = {}  # step key -> how many more times to fail

    def _maybe_fail(self, what: str) -> None:
        left = self.failures.get(what, 0)
        if left:
            self.failures[what] = left - 1
            raise ConnectionError(f"{what} is unavailable")

    def charge(self, order: dict[str, Any], key: str) -> dict[str, Any]:
        with self.lock:
            self.calls.append(("charge", key))
            self._maybe_fail("charge")
            if order.get("user_id") == "u_declined":
                raise NonRetryableStepError(
                    f"The payment provider declined the card for order {order['id']}."
                )
            if key not in self.charges:
                self.charges[key] = {
                    "charge_id": f"ch_{len(self.charges) + 1}",
                    "amount": order["total"],
                }
            return self.charges[key]

    def refund(self, charge_id: str, key: str) -> None:
        with self.lock:
            self.calls.append(("refund", key))
            self._maybe_fail("refund")
            self.refunds.setdefault(key, charge_id)

    def reserve(self, items: list[dict[str, Any]], key: str) -> dict[str, Any]:
        with self.lock:
            self.calls.append(("reserve", key))
            self._maybe_fail("reserve")
            if key not in self.reservations:
                for item in items:
                    if self.stock.get(item["product"], 0) < item["quantity"]:
                        raise NonRetryableStepError(f"{item['product']} is out of stock.")
                for item in items:
                    self.stock[item["product"]] -= item["quantity"]
                self.reservations[key] = items
            return {"reservation_id": key}

    def release(self, reservation_id: str) -> None:
        with self.lock:
            self.calls.append(("release", reservation_id))
            self._maybe_fail("release")
            if reservation_id not in self.released:
                self.released.append(reservation_id)
                for item in self.reservations.get(reservation_id, []):
                    self.stock[item["product"]] += item["quantity"]

    def mail(self, to: str, key: str) -> None:
        with self.lock:
            self.calls.append(("mail", key))
            self.mails.setdefault(key, to)


world = World()
