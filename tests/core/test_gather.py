"""Parallel reservations with ctx.gather: one step per item, each with its own key and undo."""

from __future__ import annotations

import pytest

import django_workflows as wf
from tests.core.helpers import journal, order

pytestmark = pytest.mark.django_db

ITEMS = [
    {"product": "kibble", "quantity": 1},
    {"product": "litter", "quantity": 2},
    {"product": "mouse-toy", "quantity": 1},
]


def test_every_item_is_reserved_under_its_own_idempotency_key(world, workflow_clock):
    wf.start("parallel-reservations", order(items=ITEMS), id="par")
    assert wf.drain() == 1
    status = wf.get_status("par", journal=True)
    assert status.status == "completed", status.error
    keys = [f"par:reserve-item-{i}" for i in range(3)]
    assert status.output == keys  # in argument order
    assert sorted(world.reservations) == keys
    assert world.stock == {"kibble": 24, "litter": 8, "mouse-toy": 2}
    assert {e.name for e in status.journal} == {
        "charge-payment",
        *[f"reserve-item-{i}" for i in range(3)],
    }


@pytest.mark.parametrize("workflow", ["parallel-reservations", "parallel-reservations-slow-first"])
def test_one_item_out_of_stock_releases_the_others_then_refunds(world, workflow_clock, workflow):
    items = [
        {"product": "kibble", "quantity": 1},
        {"product": "mouse-toy", "quantity": 10},  # out of stock
        {"product": "litter", "quantity": 2},
    ]
    wf.start(workflow, order(items=items), id="par")
    assert wf.drain() == 1
    status = wf.get_status("par")
    assert status.status == "failed"
    assert status.error["name"] == "StepFailedError"
    assert status.error["step"] == "reserve-item-1"
    # The other branches finished; their compensations ran in the reverse order of the
    # ctx.step() calls, whichever step finished first, and the charge's last.
    assert [(n, s) for n, kind, s in journal("par") if kind == "compensation"] == [
        ("$compensate:reserve-item-2", "completed"),
        ("$compensate:reserve-item-0", "completed"),
        ("$compensate:charge-payment", "completed"),
    ]
    undo = [call for call in world.calls if call[0] in ("release", "refund")]
    assert undo == [
        ("release", "par:reserve-item-2"),
        ("release", "par:reserve-item-0"),
        ("refund", "par:$compensate:charge-payment"),
    ]
    assert world.stock == {"kibble": 25, "litter": 10, "mouse-toy": 3}
