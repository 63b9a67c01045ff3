"""Fixtures of the shop's tests: a manual clock and a stocked warehouse, on a real database."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from django_workflows.testing import ManualClock, use_clock
from shop import services
from shop.models import Order, Stock

from .support import ITEMS, KIBBLE, PATE


@pytest.fixture
def clock() -> Iterator[ManualClock]:
    """The engine's clock, which only moves when a test advances it (from 1 January 2026)."""
    clock = ManualClock()
    with use_clock(clock):
        yield clock


@pytest.fixture(autouse=True)
def warehouse(transactional_db: None) -> None:
    """Every test starts with the seed migration's stock, on a database that really commits.

    The workflows' transactions are the point of these tests, so they commit for real, and the
    tables are emptied after each test, the seeded stock with them.
    """
    Stock.objects.all().delete()
    Stock.objects.bulk_create(
        [Stock(product_id=KIBBLE, quantity=25), Stock(product_id=PATE, quantity=40)]
    )


@pytest.fixture
def place(clock: ManualClock) -> Callable[..., Order]:
    """Place an order as `POST /orders` does, with the manual clock in use; returns the order."""

    def place(
        user_id: str = "u_42", items: list[dict[str, Any]] | None = None, shipping: str = "standard"
    ) -> Order:
        order, _ = services.place_order(user_id, items or ITEMS, shipping)
        return order

    return place
