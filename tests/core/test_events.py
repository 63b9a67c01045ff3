"""The workflow_event Django signal: one WorkflowEvent for everything that happens."""

from __future__ import annotations

from datetime import timedelta

import pytest

import django_workflows as wf
from tests.core.helpers import order

pytestmark = pytest.mark.django_db


def types(events, id=None):
    return [e.type for e in events if id is None or e.id == id]


def test_a_delivered_order_emits_its_events_in_order(world, workflow_clock, events):
    wf.start("order-fulfilment", order(), id="o")
    wf.drain()
    assert types(events) == [
        "workflow-started",
        "step-completed",
        "custom-status",
        "step-completed",
        "custom-status",
        "workflow-suspended",
    ]
    assert [e.data["status"] for e in events if e.type == "custom-status"] == [
        "paid",
        "awaiting-delivery",
    ]
    suspended = events[-1]
    assert suspended.data["wake_at"] == workflow_clock.now() + timedelta(days=3)
    assert {w["signal"] for w in suspended.data["waits"]} == {
        "shipment.delivered",
        "shipment.returned",
    }
    step = events[1]
    assert (step.data["step"], step.data["attempt"]) == ("charge-payment", 1)
    assert "duration_ms" in step.data
    assert (step.id, step.workflow, step.version, step.at) == (
        "o",
        "order-fulfilment",
        1,
        workflow_clock.now(),
    )

    started = workflow_clock.now()  # the wait began in the first execution
    events.clear()
    sent = wf.signal("shipment.delivered", {"trackingNumber": "T"}, key="71e1973d")
    wf.drain()
    assert types(events) == [
        "workflow-resumed",
        "signal-received",
        "custom-status",
        "workflow-suspended",
    ]
    assert events[0].data["run"] == 2
    received = events[1].data
    assert received == {
        "wait": "await-delivery",
        "signal": "shipment.delivered",
        "signal_id": sent.signal_id,
        "since": started,
    }

    events.clear()
    slept_from = workflow_clock.now()
    workflow_clock.advance("7d")
    wf.drain()
    assert types(events) == [
        "workflow-resumed",
        "sleep-completed",
        "step-completed",
        "workflow-completed",
    ]
    slept = events[1].data
    assert slept["since"] == slept_from
    assert slept["wake_at"] == slept_from + timedelta(days=7)
    assert events[-1].data["output"] == {"charge_id": "ch_1", "tracking_number": "T"}


def test_a_failed_attempt_emits_step_failed_with_retry_at(world, workflow_clock, events):
    world.failures["charge"] = 5
    wf.start("flaky", {"retry": {"attempts": 2, "delay": "1s"}}, id="f")
    wf.drain()
    failed = [e for e in events if e.type == "step-failed"]
    assert len(failed) == 1
    assert failed[0].data["step"] == "call"
    assert failed[0].data["attempt"] == 1
    assert failed[0].data["retry_at"] == workflow_clock.now() + timedelta(seconds=1)
    assert failed[0].data["error"]["name"] == "ConnectionError"
    workflow_clock.advance("1s")
    wf.drain()
    failed = [e for e in events if e.type == "step-failed"]
    assert failed[-1].data["retry_at"] is None  # it gave up
    assert types(events)[-1] == "workflow-failed"


def test_a_failing_order_emits_compensating_compensated_and_failed(world, workflow_clock, events):
    wf.start("order-fulfilment", order(), id="o")
    wf.drain()
    events.clear()
    workflow_clock.advance("3d")
    wf.drain()
    assert types(events) == [
        "workflow-resumed",
        "signal-timed-out",
        "workflow-compensating",
        "step-compensated",
        "step-compensated",
        "workflow-failed",
    ]
    assert events[2].data["error"]["name"] == "WorkflowFailedError"
    assert [e.data["step"] for e in events if e.type == "step-compensated"] == [
        "reserve-stock",
        "charge-payment",
    ]
    assert events[-1].data["error"]["message"] == "Order 71e1973d was not delivered within 3 days."


def test_a_cancelled_order_emits_workflow_cancelled_with_the_reason(world, workflow_clock, events):
    wf.start("order-fulfilment", order(), id="o")
    wf.drain()
    wf.cancel("o", "Changed my mind.")
    events.clear()
    wf.drain()
    assert types(events)[-1] == "workflow-cancelled"
    assert "workflow-compensating" in types(events)
    assert events[-1].data["error"] == {
        "name": "WorkflowCancelledError",
        "message": "Changed my mind.",
    }


def test_a_wait_whose_deadline_passes_emits_signal_timed_out(world, workflow_clock, events):
    wf.start("wait-once", {"timeout": "1h"}, id="w")
    wf.drain()
    workflow_clock.advance("1h")
    wf.drain()
    timed_out = [e for e in events if e.type == "signal-timed-out"]
    assert len(timed_out) == 1
    assert timed_out[0].data["wait"] == "await"


def test_a_receiver_that_fails_does_not_break_the_workflow(world, workflow_clock):
    from django_workflows.events import workflow_event

    def broken(sender, event, **kwargs):
        raise RuntimeError("receiver bug")

    workflow_event.connect(broken, weak=False)
    try:
        wf.start("wait-once", {}, id="w")
        wf.signal("ping", 1)
        wf.drain()
    finally:
        workflow_event.disconnect(broken)
    assert wf.get_status("w").status == "completed"


def test_without_receivers_events_are_still_logged_at_their_levels(
    define, workflow_clock, caplog, monkeypatch
):
    from django_workflows.events import workflow_event

    @define("one-step")
    def one_step(ctx, input):
        return ctx.step("s", lambda step: input)

    # No receiver, whatever an earlier test imported (the OpenTelemetry contrib connects one):
    # an event nobody receives is built only to be logged.
    monkeypatch.setattr(workflow_event, "receivers", [])
    with caplog.at_level("INFO", logger="django_workflows"):
        wf.start("one-step", 1, id="a")
        wf.drain()
    logged = [r.getMessage().split()[0] for r in caplog.records if r.name == "django_workflows"]
    assert "workflow-started" in logged and "workflow-completed" in logged
    assert "step-completed" not in logged  # DEBUG
    caplog.clear()
    with caplog.at_level("DEBUG", logger="django_workflows"):
        wf.start("one-step", 2, id="b")
        wf.drain()
    logged = [r.getMessage().split()[0] for r in caplog.records if r.name == "django_workflows"]
    assert "step-completed" in logged
    caplog.clear()
    with caplog.at_level("WARNING", logger="django_workflows"):
        wf.start("one-step", 3, id="c")
        wf.drain()
    assert wf.get_status("c").output == 3
    assert not [r for r in caplog.records if r.name == "django_workflows"]
