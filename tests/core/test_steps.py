"""Steps: retries with backoff against the manual clock, and how a step gives up."""

from __future__ import annotations

from datetime import timedelta

import pytest

import django_workflows as wf
from django_workflows.models import WorkflowInstance
from tests.core.helpers import entry

pytestmark = pytest.mark.django_db


def test_a_failed_attempt_parks_the_instance_until_the_backoff_has_elapsed(world, workflow_clock):
    world.failures["charge"] = 2
    started = workflow_clock.now()
    wf.start("flaky", {"retry": {"attempts": 3, "delay": "2s"}}, id="flaky-1")

    assert wf.drain() == 1
    status = wf.get_status("flaky-1")
    assert status.status == "suspended"
    assert status.wake_at == started + timedelta(seconds=2)
    assert len(world.calls) == 1
    assert wf.drain() == 0  # not due before the backoff has elapsed

    workflow_clock.advance("2s")
    assert wf.drain() == 1
    status = wf.get_status("flaky-1")
    assert status.status == "suspended"
    assert status.wake_at == workflow_clock.now() + timedelta(seconds=4)  # factor 2
    assert len(world.calls) == 2

    workflow_clock.advance("4s")
    assert wf.drain() == 1
    status = wf.get_status("flaky-1")
    assert status.status == "completed", status.error
    assert status.output == {"charge_id": "ch_1", "amount": 1}
    assert entry("flaky-1", "call").attempt == 3
    assert len(world.calls) == 3


def test_every_attempt_uses_the_same_idempotency_key(world, workflow_clock):
    world.failures["charge"] = 1
    wf.start("flaky", {"retry": {"attempts": 2, "delay": "1s"}}, id="flaky-key")
    wf.drain()
    workflow_clock.advance("1s")
    wf.drain()
    assert world.calls == [("charge", "flaky-key:call"), ("charge", "flaky-key:call")]


def test_the_backoff_grows_by_its_factor_up_to_max_delay(world, workflow_clock):
    world.failures["charge"] = 4
    wf.start(
        "flaky",
        {"retry": {"attempts": 5, "delay": "1s", "factor": 3, "max_delay": "5s"}},
        id="flaky-factor",
    )
    waits = []
    for _ in range(4):
        assert wf.drain() == 1
        status = wf.get_status("flaky-factor")
        assert status.status == "suspended"
        waits.append(status.wake_at - workflow_clock.now())
        workflow_clock.advance(status.wake_at - workflow_clock.now())
    assert waits == [timedelta(seconds=s) for s in (1, 3, 5, 5)]
    assert wf.drain() == 1
    assert wf.get_status("flaky-factor").status == "completed"


def test_a_long_run_of_retries_stays_at_max_delay(world, workflow_clock):
    # delay * factor ** 59 no longer fits a timedelta: the wait is capped, not an OverflowError.
    world.failures["charge"] = 70
    retry = {"attempts": 60, "delay": "1h", "factor": 10, "max_delay": "1d"}
    wf.start("flaky", {"retry": retry}, id="flaky-long")
    waits = set()
    for _ in range(59):
        assert wf.drain() == 1
        status = wf.get_status("flaky-long")
        assert status.status == "suspended", status.error
        waits.add(status.wake_at - workflow_clock.now())
        workflow_clock.advance(status.wake_at - workflow_clock.now())
    assert waits == {timedelta(hours=h) for h in (1, 10, 24)}
    assert wf.drain() == 1
    status = wf.get_status("flaky-long")
    assert status.status == "failed" and status.error["name"] == "StepFailedError"


@pytest.mark.parametrize(
    ("jitter", "low", "high"), [("full", 0, 10), ("equal", 5, 10), ("none", 10, 10)]
)
def test_jitter_keeps_the_wait_within_its_bounds(world, workflow_clock, jitter, low, high):
    for n in range(5):
        world.failures["charge"] = 1
        id = f"jitter-{jitter}-{n}"
        wf.start("flaky", {"retry": {"attempts": 2, "delay": "10s", "jitter": jitter}}, id=id)
        assert wf.drain() == 1
        wait = wf.get_status(id).wake_at - workflow_clock.now()
        assert timedelta(seconds=low) <= wait <= timedelta(seconds=high)


def test_retry_if_false_gives_up_before_the_attempts_run_out(world, workflow_clock):
    world.failures["charge"] = 5
    wf.start("retry-if", None, id="retry-if")
    assert wf.drain() == 1
    assert wf.get_status("retry-if").status == "suspended"  # attempt 1: retry_if said yes
    workflow_clock.advance("1s")
    assert wf.drain() == 1
    status = wf.get_status("retry-if")
    assert status.status == "failed"
    assert status.error["name"] == "StepFailedError"
    assert status.error["attempts"] == 2
    assert len(world.calls) == 2


def test_an_int_retry_is_that_many_attempts(world, workflow_clock):
    world.failures["charge"] = 5
    wf.start("retry-raw", {"retry": 2}, id="retry-int")
    wf.drain()
    workflow_clock.advance("1s")  # the RETRY setting's delay
    wf.drain()
    status = wf.get_status("retry-int")
    assert status.status == "failed"
    assert status.error["attempts"] == 2
    assert len(world.calls) == 2


def test_retry_false_means_a_single_attempt(world, workflow_clock):
    world.failures["charge"] = 5
    wf.start("retry-raw", {"retry": False}, id="retry-false")
    assert wf.drain() == 1
    status = wf.get_status("retry-false")
    assert status.status == "failed"
    assert status.error["attempts"] == 1
    assert len(world.calls) == 1


def test_a_step_retry_merges_over_the_retry_setting(world, workflow_clock, settings):
    settings.DJANGO_WORKFLOWS = {"RETRY": {"attempts": 4, "delay": "7s"}}
    world.failures["charge"] = 5
    wf.start("retry-raw", {"retry": {"attempts": 2}}, id="retry-merge")
    wf.drain()
    assert wf.get_status("retry-merge").wake_at == workflow_clock.now() + timedelta(seconds=7)
    workflow_clock.advance("7s")
    wf.drain()
    assert wf.get_status("retry-merge").error["attempts"] == 2


def test_a_non_retryable_step_error_fails_the_step_at_once(world, workflow_clock):
    wf.start("non-retryable", None, id="declined")
    assert wf.drain() == 1
    status = wf.get_status("declined")
    assert status.status == "failed"
    assert status.error["name"] == "StepFailedError"
    assert status.error["attempts"] == 1
    assert status.error["cause"] == {
        "name": "NonRetryableStepError",
        "message": "The payment provider declined the card for order d.",
    }
    assert len(world.calls) == 1


def test_a_step_that_gives_up_fails_the_instance_with_a_step_failed_error(world, workflow_clock):
    world.failures["charge"] = 5
    wf.start("flaky", {"retry": {"attempts": 2, "delay": "1s"}}, id="gives-up")
    wf.drain()
    workflow_clock.advance("1s")
    wf.drain()
    status = wf.get_status("gives-up", journal=True)
    assert status.status == "failed"
    error = status.error
    assert error["name"] == "StepFailedError"
    assert error["step"] == "call"
    assert error["attempts"] == 2
    assert error["cause"] == {"name": "ConnectionError", "message": "charge is unavailable"}
    assert isinstance(error["message"], str) and error["message"]
    call = next(e for e in status.journal if e.name == "call")
    assert (call.kind, call.status, call.attempt) == ("step", "failed", 2)


@pytest.mark.parametrize("delay", [0, "0s"])
def test_a_step_retried_at_once_completes_with_its_second_attempt(define, delay):
    attempts = []

    @define("retry-at-once")
    def run(ctx, input):
        def flaky(step):
            attempts.append(step.attempt)
            if step.attempt == 1:
                raise RuntimeError("the first attempt fails")
            return "done"

        return ctx.step("flaky", flaky, retry=wf.Retry(attempts=2, delay=delay))

    wf.start("retry-at-once", None, id="rao")
    wf.drain()
    status = wf.get_status("rao", journal=True)
    assert (status.status, status.output) == ("completed", "done")
    assert attempts == [1, 2]
    (step,) = [e for e in status.journal if e.name == "flaky"]
    assert step.attempt == 2


def test_a_cancel_requested_during_a_failing_attempt_keeps_that_attempt_as_the_entry(define):
    """The failed attempt's entry and the next attempt's start go in one write; the start is
    dropped when a cancel came meanwhile, so the journal shows the attempt that ran."""
    attempts = []

    @define("cancel-while-failing")
    def run(ctx, input):
        def flaky(step):
            attempts.append(step.attempt)
            WorkflowInstance.objects.filter(pk="cwf").update(
                cancel_requested=True, cancel_reason="stop"
            )
            raise RuntimeError("the first attempt fails")

        return ctx.step("flaky", flaky, retry=wf.Retry(attempts=2, delay=0))

    wf.start("cancel-while-failing", None, id="cwf")
    wf.drain()
    status = wf.get_status("cwf", journal=True)
    assert status.status == "cancelled"
    assert attempts == [1]
    (step,) = [e for e in status.journal if e.name == "flaky"]
    assert (step.attempt, step.error["message"]) == (1, "the first attempt fails")
