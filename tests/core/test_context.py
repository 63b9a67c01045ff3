"""The workflow context: journaled values, custom status, and the rules for workflow code."""

from __future__ import annotations

import uuid
from datetime import datetime

import pytest

import django_workflows as wf
from django_workflows import workflow
from django_workflows.engine.registry import registry
from tests.core.helpers import journal, order
from tests.testapp.workflows import fulfil_order, fulfilment_id
from tests.testapp.world import world as the_world

pytestmark = pytest.mark.django_db


# -- journaled values ---------------------------------------------------------------------------


def test_now_random_and_uuid_return_the_same_values_on_every_replay(workflow_clock):
    first_now = workflow_clock.now()
    wf.start("values", None, id="values")
    wf.drain()
    status = wf.get_status("values", journal=True)
    assert status.status == "suspended"
    recorded = [e for e in status.journal if e.kind == "value"]
    assert len(recorded) == 3
    workflow_clock.advance("1m")
    wf.drain()
    status = wf.get_status("values")
    assert status.status == "completed"
    output = status.output  # computed by the replay, a minute later
    assert datetime.fromisoformat(output["now"]) == first_now
    assert [e.result for e in recorded][1:] == [output["random"], output["uuid"]]
    assert 0 <= output["random"] < 1
    assert str(uuid.UUID(output["uuid"])) == output["uuid"]


# -- custom status -------------------------------------------------------------------------------


def test_the_custom_status_is_written_with_the_next_write(workflow_clock):
    wf.start("statuses", {"stage": "two"}, id="status")
    wf.drain()
    assert wf.get_status("status").custom_status == {"stage": "one"}
    workflow_clock.advance("1h")
    wf.drain()
    assert wf.get_status("status").custom_status == {"stage": "two"}


def test_setting_the_custom_status_to_none_clears_it(workflow_clock):
    wf.start("statuses", None, id="status")
    wf.drain()
    workflow_clock.advance("1h")
    wf.drain()
    status = wf.get_status("status")
    assert status.status == "suspended"
    assert status.custom_status is None


def test_the_custom_status_is_not_journaled(workflow_clock):
    wf.start("statuses", {"stage": "two"}, id="status")
    wf.drain()
    assert journal("status") == [("nap", "sleep", "pending")]


def test_a_custom_status_over_16_kib_fails_the_instance_with_a_type_error(workflow_clock):
    wf.start("statuses", "x" * (16 * 1024 + 1), id="big")
    wf.drain()
    workflow_clock.advance("1h")
    wf.drain()
    status = wf.get_status("big")
    assert status.status == "failed"
    assert status.error["name"] == "TypeError"
    assert "16 KiB" in status.error["message"]
    assert status.custom_status == {"stage": "one"}


def test_a_custom_status_that_is_not_json_fails_the_instance_with_a_type_error(workflow_clock):
    wf.start("status-not-json", None, id="not-json")
    wf.drain()
    status = wf.get_status("not-json")
    assert status.status == "failed"
    assert status.error["name"] == "TypeError"
    assert "custom status" in status.error["message"]


def test_the_custom_status_limit_counts_bytes_of_utf_8(define, workflow_clock):
    @define("accented")
    def accented(ctx, input):
        ctx.set_status("é" * input)  # two bytes each in UTF-8

    wf.start("accented", 8000, id="fits")
    wf.start("accented", 8200, id="too-big")
    wf.drain()
    assert wf.get_status("fits").custom_status == "é" * 8000
    assert wf.get_status("too-big").error["message"] == (
        "The custom status takes more than 16 KiB as JSON."
    )


# -- rules for workflow code -----------------------------------------------------------------------


def test_a_name_used_twice_fails_the_instance_without_compensating(world, workflow_clock):
    wf.start("name-twice", None, id="twice")
    wf.drain()
    status = wf.get_status("twice")
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowDefinitionError"
    assert '"charge-payment"' in status.error["message"]
    assert not [n for n, kind, _ in journal("twice") if kind == "compensation"]
    assert world.refunds == {}


def test_calling_ctx_inside_a_step_fails_the_instance_without_compensating(world, workflow_clock):
    wf.start("ctx-in-step", None, id="ctx-in-step")
    wf.drain()
    status = wf.get_status("ctx-in-step")
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowDefinitionError"
    assert world.refunds == {}


@pytest.mark.parametrize("call", ["fail", "set_status"])
def test_ctx_fail_or_set_status_inside_a_step_fails_the_instance_and_is_not_retried(
    define, workflow_clock, call
):
    attempts = []

    @define("fail-in-step")
    def run(ctx, input):
        def bad(step):
            attempts.append(step.attempt)
            ctx.fail("declined") if call == "fail" else ctx.set_status("busy")

        ctx.step("bad", bad, retry=wf.Retry(attempts=3, delay="1s"))

    wf.start("fail-in-step", None, id="fis")
    wf.drain()
    status = wf.get_status("fis")
    assert (status.status, status.error["name"]) == ("failed", "WorkflowDefinitionError")
    assert f"ctx.{call}()" in status.error["message"]
    assert attempts == [1]


def test_workflow_interrupt_is_a_base_exception():
    assert issubclass(wf.WorkflowInterrupt, BaseException)
    assert not issubclass(wf.WorkflowInterrupt, Exception)


def test_except_exception_in_workflow_code_does_not_swallow_a_suspension(workflow_clock):
    wf.start("swallow", None, id="swallow")
    wf.drain()
    assert wf.get_status("swallow").status == "suspended"
    workflow_clock.advance("1h")
    wf.drain()
    assert wf.get_status("swallow").output == "slept"


def test_a_deploy_that_renames_a_step_fails_with_a_non_determinism_error(world, workflow_clock):
    id = fulfilment_id("6d0f8c06")
    wf.start("order-fulfilment", order(id="6d0f8c06"), id=id)
    wf.drain()
    assert wf.get_status(id).status == "suspended"

    def renamed(ctx, order):
        ctx.step(
            "charge-card",
            lambda step: the_world.charge(order, step.idempotency_key),
            compensate=lambda charge, step: the_world.refund(
                charge["charge_id"], step.idempotency_key
            ),
        )
        ctx.step(
            "reserve-stock",
            lambda step: the_world.reserve(order["items"], step.idempotency_key),
            compensate=lambda reservation, step: the_world.release(reservation["reservation_id"]),
        )
        ctx.wait_for_signal("await-delivery", "shipment.delivered", key=order["id"])
        return None

    registry.unregister(fulfil_order)
    deployed = workflow("order-fulfilment", timeout="30d")(renamed)
    try:
        wf.signal("shipment.delivered", {"trackingNumber": "TRK1"}, key="6d0f8c06")
        wf.drain()
    finally:
        registry.unregister(deployed)
        registry.register(fulfil_order)

    status = wf.get_status(id, journal=True)
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowNonDeterminismError"
    message = status.error["message"]
    assert '"charge-payment", "reserve-stock", "await-delivery"' in message
    assert '"charge-card"' in message
    assert [("charge", f"{id}:charge-payment")] == [c for c in world.calls if c[0] == "charge"]
    assert world.refunds == {} and world.released == []
    assert [e.name for e in status.journal] == ["charge-payment", "reserve-stock", "await-delivery"]


def test_a_custom_status_of_exactly_16_kib_is_accepted(workflow_clock):
    value = "x" * (16 * 1024 - 2)  # 16,384 bytes as JSON, with its quotes
    wf.start("statuses", value, id="exact")
    wf.drain()
    workflow_clock.advance("1h")
    wf.drain()
    status = wf.get_status("exact")
    assert status.status == "suspended", status.error
    assert status.custom_status == value
