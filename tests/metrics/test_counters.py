"""The worker's counters, in-process: each step attempt by outcome and its time, each execution
by its outcome, each claim's time; nothing counted while METRICS is off."""

from __future__ import annotations

import pytest

import django_workflows as wf
from django_workflows import Retry
from django_workflows.worker import Worker

pytestmark = pytest.mark.django_db


def test_each_step_attempt_and_execution_is_counted_by_outcome(define, sample, workflow_clock):
    failures = iter([ConnectionError("carrier unreachable")])

    def flaky(step):
        error = next(failures, None)
        if error is not None:
            raise error
        return "shipped"

    @define("metrics-order")
    def run(ctx, input):
        ctx.step("charge", lambda step: "c1")
        return ctx.step("ship", flaky, retry=Retry(attempts=2))

    wf.start("metrics-order", None, id="metrics-order-1")
    wf.drain()
    workflow_clock.advance("10s")
    wf.drain()
    attempts = "django_workflows_step_attempts_total"
    assert sample(attempts, workflow="metrics-order", step="charge", outcome="completed") == 1
    assert sample(attempts, workflow="metrics-order", step="ship", outcome="failed") == 1
    assert sample(attempts, workflow="metrics-order", step="ship", outcome="completed") == 1
    assert sample(attempts, workflow="metrics-order", step="charge", outcome="failed") == 0
    seconds = "django_workflows_step_seconds_count"
    assert sample(seconds, workflow="metrics-order", step="ship") == 2
    assert sample(seconds, workflow="metrics-order", step="charge") == 1
    executions = "django_workflows_executions_total"
    assert sample(executions, workflow="metrics-order", outcome="suspended") == 1
    assert sample(executions, workflow="metrics-order", outcome="completed") == 1
    assert wf.get_status("metrics-order-1").status == "completed"


def test_a_failed_execution_and_a_compensation_are_counted(define, sample):
    @define("metrics-refund")
    def run(ctx, input):
        ctx.step("charge", lambda step: "c1", compensate=lambda step, result: "refunded")
        ctx.step("ship", lambda step: 1 / 0, retry=Retry(attempts=1))

    wf.start("metrics-refund", None, id="metrics-refund-1")
    wf.drain()
    status = wf.get_status("metrics-refund-1").status
    attempts = "django_workflows_step_attempts_total"
    assert sample(attempts, workflow="metrics-refund", step="ship", outcome="failed") == 1
    assert (
        sample(attempts, workflow="metrics-refund", step="$compensate:charge", outcome="completed")
        == 1
    )
    executions = "django_workflows_executions_total"
    assert sample(executions, workflow="metrics-refund", outcome=status) == 1


def test_the_worker_times_each_claim(define, sample):
    @define("metrics-claimed")
    def run(ctx, input):
        return "done"

    before = sample("django_workflows_claim_seconds_count")
    for n in range(3):
        wf.start("metrics-claimed", None, id=f"metrics-claimed-{n}")
    assert Worker().drain() == 3
    # One claim per instance, and the last one that found nothing.
    assert sample("django_workflows_claim_seconds_count") - before == 4
    assert sample("django_workflows_claim_seconds_sum") > 0


def test_nothing_is_counted_while_metrics_is_off(define, settings):
    from django_workflows.metrics.counters import metrics

    settings.DJANGO_WORKFLOWS = {"METRICS": False}

    @define("metrics-off")
    def run(ctx, input):
        return ctx.step("charge", lambda step: "c1")

    before = metrics().registry.get_sample_value("django_workflows_claim_seconds_count") or 0
    wf.start("metrics-off", None, id="metrics-off-1")
    wf.drain()
    registry = metrics().registry
    assert (
        registry.get_sample_value(
            "django_workflows_step_attempts_total",
            {"workflow": "metrics-off", "step": "charge", "outcome": "completed"},
        )
        is None
    )
    assert (registry.get_sample_value("django_workflows_claim_seconds_count") or 0) == before
