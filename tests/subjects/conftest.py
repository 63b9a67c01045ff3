"""What the subject tests share: a workflow about an order, and orders to start it about."""

from __future__ import annotations

from typing import Any

import pytest

from tests.testapp.models import Ledger, Order


@pytest.fixture
def review(define: Any) -> Any:
    """`order-review`: waits for the signal `review.verdict` keyed by the order's id, shows the
    verdict as its custom status, and returns it."""

    @define("order-review")
    def review(ctx: Any, order: dict[str, Any]) -> dict[str, Any]:
        ctx.set_status("awaiting-review")
        verdict = ctx.wait_for_signal("await-verdict", "review.verdict", key=order["id"])
        ctx.set_status(verdict)
        return {"order": order["id"], "verdict": verdict}

    return review


@pytest.fixture
def order(db: None) -> Order:
    """A saved order, keyed by a string."""
    return Order.objects.create(id="3f9a1c")


@pytest.fixture
def ledger(db: None) -> Ledger:
    """A saved ledger row, keyed by an integer."""
    return Ledger.objects.create(order_id="3f9a1c", total=2499)
