"""django_workflows.contrib.opentelemetry: a span per execution, a child span per step attempt
and compensation, events as span events, and a link to the span that called start()."""

from __future__ import annotations

import logging

import pytest
from opentelemetry.trace import SpanKind, StatusCode

import django_workflows as wf
from django_workflows import Retry
from django_workflows.codecs import AesGcmPayloadCodec

pytestmark = pytest.mark.django_db


def by_name(spans, name):
    return [span for span in spans if span.name == name]


def test_an_execution_is_a_span_with_a_child_span_per_step(define, spans):
    @define("otel-order")
    def run(ctx, input):
        ctx.step("charge", lambda step: "c1")
        ctx.step("ship", lambda step: "s1")
        return "done"

    wf.start("otel-order", None, id="otel-order-1")
    wf.drain()
    [execution] = by_name(spans(), "workflow otel-order")
    [charge] = by_name(spans(), "step charge")
    [ship] = by_name(spans(), "step ship")
    assert execution.kind == SpanKind.CONSUMER
    assert dict(execution.attributes) == {
        "workflow.name": "otel-order",
        "workflow.version": 1,
        "workflow.instance.id": "otel-order-1",
        "workflow.run": 1,
        "workflow.outcome": "completed",
    }
    for step in (charge, ship):
        assert step.parent.span_id == execution.context.span_id
        assert step.context.trace_id == execution.context.trace_id
    # What the span's name and status say already (a step, completed) is no attribute.
    assert dict(charge.attributes) == {"workflow.step.name": "charge", "workflow.step.attempt": 1}
    assert charge.status.status_code == StatusCode.UNSET
    assert execution.status.status_code == StatusCode.UNSET
    # The completion is the execution span's outcome, not also a span event.
    assert execution.events == ()
    assert charge.start_time < ship.start_time < execution.end_time


def test_a_failed_attempt_records_its_exception_with_status_error(define, spans, workflow_clock):
    attempts = []

    def flaky(step):
        attempts.append(step.attempt)
        if step.attempt == 1:
            raise ConnectionError("carrier unreachable")
        return "shipped"

    @define("otel-flaky")
    def run(ctx, input):
        return ctx.step("ship", flaky, retry=Retry(attempts=2))

    wf.start("otel-flaky", None, id="otel-flaky-1")
    wf.drain()
    workflow_clock.advance("10s")
    wf.drain()
    first, second = by_name(spans(), "step ship")
    assert (
        first.attributes["workflow.step.attempt"],
        second.attributes["workflow.step.attempt"],
    ) == (1, 2)
    assert first.status.status_code == StatusCode.ERROR
    assert first.status.description == "ConnectionError: carrier unreachable"
    assert first.attributes["workflow.step.outcome"] == "failed"
    assert first.attributes["error.type"] == "ConnectionError"
    [exception] = first.events
    assert exception.name == "exception"
    assert exception.attributes["exception.type"] == "ConnectionError"
    assert exception.attributes["exception.message"] == "carrier unreachable"
    assert second.status.status_code == StatusCode.UNSET
    assert "workflow.step.outcome" not in second.attributes
    assert "error.type" not in second.attributes
    # Two executions: the first parked the instance for the retry's backoff.
    runs = by_name(spans(), "workflow otel-flaky")
    assert [span.attributes["workflow.run"] for span in runs] == [1, 2]
    assert [event.name for event in runs[0].events] == ["workflow-suspended"]
    assert first.parent.span_id == runs[0].context.span_id
    assert second.parent.span_id == runs[1].context.span_id


def test_a_compensation_is_a_span_and_a_failed_instance_an_error(define, spans):
    @define("otel-undo")
    def run(ctx, input):
        ctx.step("reserve", lambda step: "r1", compensate=lambda result, step: "released")
        ctx.fail("out of stock")

    wf.start("otel-undo", None, id="otel-undo-1")
    wf.drain()
    [execution] = by_name(spans(), "workflow otel-undo")
    [compensation] = by_name(spans(), "compensate reserve")
    assert dict(compensation.attributes) == {
        "workflow.step.name": "reserve",
        "workflow.step.attempt": 1,
    }
    assert compensation.parent.span_id == execution.context.span_id
    assert execution.attributes["workflow.outcome"] == "failed"
    assert execution.status.status_code == StatusCode.ERROR
    names = [event.name for event in execution.events]
    assert "workflow-compensating" in names and "workflow-failed" in names
    assert "step-compensated" not in names  # the compensation's span stands for it


def test_sleeps_waits_and_child_starts_are_child_spans_of_the_execution(
    define, spans, workflow_clock
):
    @define("otel-child")
    def child(ctx, input):
        return "child done"

    @define("otel-parent")
    def run(ctx, input):
        ctx.start_child("otel-child", None, id="otel-child-1")
        ctx.sleep("nap", "1h")
        return ctx.wait_for_signal("payment", "paid", key="otel-parent-1", timeout="1d")

    wf.start("otel-parent", None, id="otel-parent-1")
    wf.drain()
    workflow_clock.advance("1h")
    wf.drain()
    wf.signal("paid", {"ok": True}, key="otel-parent-1")
    wf.drain()
    first, second, third = by_name(spans(), "workflow otel-parent")
    # The events their child spans stand for are not also span events.
    [suspended] = first.events
    assert suspended.name == "workflow-suspended"
    assert suspended.attributes["workflow.wake_at"].startswith("2026-01-01T01:00:00")
    assert [event.name for event in second.events] == ["workflow-suspended"]
    assert "workflow.waits" in second.events[-1].attributes
    assert third.events == ()
    # A child's start, a sleep and a wait are child spans of the execution that went past them,
    # from when they began to when they ended, on the engine's clock.
    [start_child] = by_name(spans(), "start child otel-child")
    assert start_child.parent.span_id == first.context.span_id
    assert start_child.attributes["workflow.child"] == "otel-child-1"
    [nap] = by_name(spans(), "sleep nap")
    assert nap.parent.span_id == second.context.span_id
    assert nap.end_time - nap.start_time == 3600 * 10**9
    assert nap.attributes["workflow.outcome"] == "sleep-completed"
    [payment] = by_name(spans(), "wait payment")
    assert payment.parent.span_id == third.context.span_id
    assert payment.attributes["workflow.signal"] == "paid"
    assert payment.attributes["workflow.outcome"] == "signal-received"
    assert payment.start_time == nap.end_time
    # The child's execution links to the parent's execution span, which started it.
    [child_execution] = by_name(spans(), "workflow otel-child")
    [link] = child_execution.links
    assert link.context.span_id == first.context.span_id


def test_a_wait_whose_timer_won_is_a_span_that_says_so(define, spans, workflow_clock):
    @define("otel-timeout-wait")
    def run(ctx, input):
        return ctx.wait_for_signal("approval", "approved", key="otel-tw-1", timeout="2h")

    wf.start("otel-timeout-wait", None, id="otel-tw-1")
    wf.drain()
    assert by_name(spans(), "wait approval") == []  # still waiting: no span yet
    workflow_clock.advance("2h")
    wf.drain()
    [approval] = by_name(spans(), "wait approval")
    assert approval.attributes["workflow.outcome"] == "signal-timed-out"
    assert approval.end_time - approval.start_time == 2 * 3600 * 10**9


def test_the_first_execution_links_to_the_span_that_called_start(define, spans, tracer):
    @define("otel-linked")
    def run(ctx, input):
        return ctx.step("charge", lambda step: "c1")

    with tracer.start_as_current_span("POST /orders") as request:
        wf.start("otel-linked", None, id="otel-linked-1")
    wf.drain()
    [execution] = by_name(spans(), "workflow otel-linked")
    [link] = execution.links
    assert link.context.trace_id == request.get_span_context().trace_id
    assert link.context.span_id == request.get_span_context().span_id
    assert execution.context.trace_id != request.get_span_context().trace_id  # a link, not a parent


def test_an_instance_started_outside_any_span_has_no_link(define, spans):
    @define("otel-unlinked")
    def run(ctx, input):
        return ctx.step("charge", lambda step: "c1")

    wf.start("otel-unlinked", None, id="otel-unlinked-1")
    wf.drain()
    [execution] = by_name(spans(), "workflow otel-unlinked")
    assert execution.links == ()


def test_a_step_run_on_a_thread_of_its_own_is_still_a_child_of_its_execution(define, spans):
    @define("otel-timeout")
    def run(ctx, input):
        return ctx.step("quote", lambda step: "q1", timeout="30s")

    wf.start("otel-timeout", None, id="otel-timeout-1")
    wf.drain()
    [execution] = by_name(spans(), "workflow otel-timeout")
    [quote] = by_name(spans(), "step quote")
    assert quote.parent.span_id == execution.context.span_id


def test_the_custom_status_is_a_payload_left_out_of_span_events_and_logs(
    define, spans, settings, caplog
):
    settings.DJANGO_WORKFLOWS = {
        **settings.DJANGO_WORKFLOWS,
        "CODEC": AesGcmPayloadCodec(keys={"k1": "dGVzdHMtb25seS1rZXktMzItYnl0ZXMtbG9uZy4uLi4="}),
    }

    @define("otel-status")
    def run(ctx, input):
        ctx.set_status({"card": "4242 4242 4242 4242"})
        ctx.step("charge", lambda step: "c1")
        return "done"

    with caplog.at_level(logging.DEBUG, logger="django_workflows"):
        wf.start("otel-status", None, id="otel-status-1")
        wf.drain()
    assert wf.get_status("otel-status-1").custom_status == {"card": "4242 4242 4242 4242"}
    [execution] = by_name(spans(), "workflow otel-status")
    [event] = [event for event in execution.events if event.name == "custom-status"]
    assert "4242 4242" not in repr(dict(event.attributes))
    assert not [span for span in spans() if "4242 4242" in repr(span.to_json())]
    [logged] = [r.getMessage() for r in caplog.records if "custom-status" in r.getMessage()]
    assert "4242 4242" not in logged
