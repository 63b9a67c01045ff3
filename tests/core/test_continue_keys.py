"""A run after ctx.continue_as_new() derives keys of its own: the same step name in the next
generation is another operation for the system it calls, and a start() inside it another child."""

from __future__ import annotations

import pytest

import django_workflows as wf

pytestmark = pytest.mark.django_db(transaction=True)


def test_each_generation_has_its_own_idempotency_keys_and_step_started_ids(define):
    keys: list[str] = []

    @define("monthly-box")
    def monthly(ctx, input):
        return "shipped"

    @define("subscription")
    def subscription(ctx, input):
        def ship(step):
            keys.append(step.idempotency_key)
            return wf.start("monthly-box", {"month": input["month"]}).id

        started = ctx.step("ship", ship)
        if input["month"] < 3:
            ctx.continue_as_new({"month": input["month"] + 1})
        return started

    wf.start("subscription", {"month": 1}, id="sub-1")
    wf.drain()
    assert wf.get_status("sub-1").status == "completed"
    # the first run keeps the keys it always had; the later ones are the generation's
    assert keys == ["sub-1:ship", "sub-1~1:ship", "sub-1~2:ship"]
    boxes = wf.list_instances(workflow="monthly-box")
    assert sorted(box.input["month"] for box in boxes) == [1, 2, 3]
    assert all(box.status == "completed" for box in boxes)
