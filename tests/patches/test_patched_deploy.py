"""A patched deploy as it happens: a worker process on the old code is stopped, the patched code
is deployed and a new worker runs the old instance and a new one to their end, through a sleep
and a signal; and an undo interrupted on the old code resumes on the patched one."""

from __future__ import annotations

from typing import Any

import pytest

import django_workflows as wf
from django_workflows import Retry
from tests.core.helpers import names
from tests.helpers import wait_until, worker_thread
from tests.patches.conftest import NAME
from tests.patches.test_patches import old_code, patched_code

pytestmark = pytest.mark.django_db(transaction=True)

WORKER = {"poll_interval": "50ms"}


def _status(id: str) -> str:
    status = wf.get_status(id)
    return "" if status is None else status.status


def test_a_rolling_deploy_of_a_patch_with_real_workers(deploy, workflow_clock):
    ran: list[str] = []
    answers: dict[str, list[bool]] = {}
    deploy(old_code(ran))
    with worker_thread(**WORKER):
        wf.start(NAME, {"id": "old"}, id="old")
        assert wait_until(lambda: _status("old") == "suspended", 30)

    deploy(patched_code(ran, answers))
    with worker_thread(**WORKER):
        wf.start(NAME, {"id": "new"}, id="new")
        assert wait_until(lambda: _status("new") == "suspended", 30)
        workflow_clock.advance("1h")
        assert wait_until(lambda: "await-delivery" in names("old"), 30)
        assert wait_until(lambda: "await-delivery" in names("new"), 30)
        for id in ("old", "new"):
            wf.signal("shipment.delivered", {"tracking": id}, key=id)
        assert wait_until(lambda: _status("old") == _status("new") == "completed", 30)

    assert wf.get_status("old").output["mail"] == "email-receipt"
    assert wf.get_status("new").output["mail"] == "send-order-confirmation"
    assert set(answers["old"]) == {False} and set(answers["new"]) == {True}
    assert sorted(ran) == sorted(
        [
            "old:charge-payment",
            "old:email-receipt",
            "old:ask-for-review",
            "new:charge-payment",
            "new:send-order-confirmation",
            "new:ask-for-review",
        ]
    )


def test_an_undo_resumed_on_the_patched_code_rebuilds_its_compensations_without_a_marker(
    deploy, workflow_clock
):
    refunds: list[str] = []

    def refund(step: Any) -> None:
        refunds.append(step.idempotency_key)
        if len(refunds) == 1:
            raise RuntimeError("The payment provider is down.")

    def charge(ctx: Any) -> None:
        ctx.step(
            "charge-payment",
            lambda step: "ch_1",
            compensate=lambda charge, step: refund(step),
            compensate_retry=Retry(attempts=2, delay="1m"),
        )

    def before(ctx: Any, order: dict[str, Any]) -> None:
        charge(ctx)
        ctx.fail("The order was withdrawn.")

    def after(ctx: Any, order: dict[str, Any]) -> None:
        charge(ctx)
        if ctx.patched("order-confirmation"):
            ctx.step("send-order-confirmation", lambda step: "sent")
        ctx.fail("The order was withdrawn.")

    deploy(before)
    wf.start(NAME, {}, id="undo")
    wf.drain()
    assert _status("undo") == "compensating"  # the refund waits for its second attempt

    deploy(after)
    workflow_clock.advance("1m")
    wf.drain()
    status = wf.get_status("undo")
    assert status.status == "failed"
    assert status.error["message"] == "The order was withdrawn."
    assert len(refunds) == 2
    # The undo's replay stopped at the end of the journal, where the patch is: nothing recorded.
    assert not any(name.startswith("$patch:") for name in names("undo"))
