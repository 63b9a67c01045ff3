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


# -- a step in the same gather as a sleep or wait starts after it (the reference's rules for
# workflow code): decided the same way at every execution, whichever thread runs first.


@pytest.mark.parametrize("order", ["step-first", "sleep-first"])
def test_a_step_in_the_same_gather_as_a_sleep_starts_after_it(define, workflow_clock, order):
    ran = []

    @define("gather-sleep")
    def run(ctx, input):
        step = lambda: ctx.step("s", lambda step: ran.append("s") or "ok")  # noqa: E731
        nap = lambda: ctx.sleep("nap", "1h")  # noqa: E731
        return ctx.gather(*([step, nap] if input == "step-first" else [nap, step]))

    for n in range(5):  # whichever branch's thread runs first
        ran.clear()
        id = f"gs-{n}"
        wf.start("gather-sleep", order, id=id)
        wf.drain()
        assert (wf.get_status(id).status, ran) == ("suspended", [])
        workflow_clock.advance("1h")
        wf.drain()
        assert (wf.get_status(id).status, ran) == ("completed", ["s"])


def test_a_gather_of_a_pending_wait_and_a_step_parks_without_running_the_step(
    define, workflow_clock
):
    ran = []

    @define("gather-wait-step")
    def run(ctx, input):
        return ctx.gather(
            lambda: ctx.wait_for_signal("await-paid", "order.paid", key=input),
            lambda: ctx.step("ship", lambda step: ran.append(input) or "shipped"),
        )

    for n in range(10):  # used to hang: the wait held a lock the step's start needed
        wf.start("gather-wait-step", f"k{n}", id=f"gw-{n}")
        wf.drain()
        assert (wf.get_status(f"gw-{n}").status, ran) == ("suspended", [])
        wf.signal("order.paid", {"paid": True}, key=f"k{n}")
        wf.drain()
        assert wf.get_status(f"gw-{n}").output == [{"paid": True}, "shipped"]
        assert ran == [f"k{n}"]
        ran.clear()


def test_steps_of_a_gather_without_sleeps_all_start_in_the_first_execution(define, workflow_clock):
    started = []

    @define("gather-steps-then-sleep")
    def run(ctx, input):
        def branch(i):
            ctx.step(f"a-{i}", lambda step: started.append(f"a-{i}"))
            ctx.step(f"b-{i}", lambda step: started.append(f"b-{i}"))

        ctx.gather(*[lambda i=i: branch(i) for i in range(3)])
        ctx.sleep("after", "1h")

    wf.start("gather-steps-then-sleep", None, id="gss")
    wf.drain()
    assert sorted(started) == ["a-0", "a-1", "a-2", "b-0", "b-1", "b-2"]
    assert wf.get_status("gss").status == "suspended"
