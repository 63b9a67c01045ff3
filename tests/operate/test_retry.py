"""retry(): the reference's "Retry, delete or terminate" and the store contract's `reopen`."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

import django_workflows as wf
from django_workflows.engine.registry import registry
from django_workflows.events import workflow_event
from django_workflows.models import WorkflowInstance
from tests.core.helpers import entry, order

pytestmark = pytest.mark.django_db


def calls(world, kind: str) -> int:
    return sum(1 for k, _ in world.calls if k == kind)


def failed_two_steps(world, id: str = "r1", failures: int = 1) -> None:
    world.failures["charge"] = failures
    wf.start("ops-two-steps", {}, id=id)
    wf.drain()
    assert wf.get_status(id).status == "failed"


def test_retry_runs_a_failed_instance_again_without_rerunning_completed_steps(
    workflow_clock, world
):
    failed_two_steps(world)
    assert calls(world, "reserve") == 1 and calls(world, "charge") == 1
    reopened = wf.retry("r1")
    assert reopened.status == "pending" and reopened.error is None
    wf.drain()
    done = wf.get_status("r1")
    assert done.status == "completed", done.error
    assert done.output == {"reservation": "r1:reserve", "charge": "ch_1"}
    assert calls(world, "reserve") == 1  # the completed step returned its journaled result
    assert calls(world, "charge") == 2


def test_retry_gives_the_failed_step_its_attempts_back_from_attempt_one(
    workflow_clock, world, events
):
    failed_two_steps(world, failures=3)
    assert entry("r1", "charge").attempt == 1
    wf.retry("r1")
    wf.drain()
    assert wf.get_status("r1").status == "failed"
    assert entry("r1", "charge").attempt == 1  # not 2: the attempts restarted
    wf.retry("r1")
    wf.drain()
    assert wf.get_status("r1").status == "failed"
    failed = [e.data["attempt"] for e in events if e.type == "step-failed"]
    assert failed == [1, 1, 1]


def test_retry_gives_a_multi_attempt_step_all_its_attempts_again(workflow_clock, world):
    world.failures["charge"] = 2
    wf.start("ops-two-steps", {"attempts": 2}, id="r2")
    for _ in range(3):
        wf.drain()
        workflow_clock.advance("2s")
    assert wf.get_status("r2").status == "failed"
    assert calls(world, "charge") == 2
    world.failures["charge"] = 1  # fails once more: the second attempt must be there
    wf.retry("r2")
    for _ in range(3):
        wf.drain()
        workflow_clock.advance("2s")
    assert wf.get_status("r2").status == "completed"
    assert entry("r2", "charge").attempt == 2
    assert calls(world, "charge") == 4


def test_retry_journals_retry_entries_with_the_status_and_error_they_retried(workflow_clock, world):
    failed_two_steps(world, failures=2)
    first_error = wf.get_status("r1").error
    wf.retry("r1")
    wf.drain()
    second_error = wf.get_status("r1").error
    wf.retry("r1")
    wf.drain()
    status = wf.get_status("r1", journal=True)
    assert status.status == "completed"
    retries = [e for e in status.journal if e.kind == "retry"]
    assert [e.name for e in retries] == ["$retry:1", "$retry:2"]
    assert retries[0].result == {"status": "failed", "error": first_error}
    assert retries[1].result == {"status": "failed", "error": second_error}
    assert first_error["name"] == "StepFailedError" and first_error["step"] == "charge"


def test_retry_emits_workflow_retried_with_from_and_error(workflow_clock, world, events):
    failed_two_steps(world)
    error = wf.get_status("r1").error
    wf.retry("r1")
    retried = [e for e in events if e.type == "workflow-retried"]
    assert len(retried) == 1
    assert retried[0].id == "r1" and retried[0].workflow == "ops-two-steps"
    assert retried[0].data["from"] == "failed"
    assert retried[0].data["error"] == error


def test_retry_restarts_a_sleep_the_instance_left_behind(workflow_clock, world):
    wf.start("ops-timed-sleep", None, id="s1")
    wf.drain()
    assert wf.get_status("s1").status == "suspended"
    workflow_clock.advance("1h")
    wf.drain()
    failed = wf.get_status("s1")
    assert failed.status == "failed" and failed.error["name"] == "WorkflowTimeoutError"
    workflow_clock.advance("5h")
    retried_at = workflow_clock.now()
    wf.retry("s1", timeout=None)
    wf.drain()
    parked = wf.get_status("s1")
    assert parked.status == "suspended"
    assert parked.wake_at == retried_at + timedelta(hours=2)  # the nap starts over
    assert parked.deadline is None
    workflow_clock.advance("2h")
    wf.drain()
    assert wf.get_status("s1").status == "completed"
    assert calls(world, "mail") == 2  # "first" once, "after" once


def test_retry_restarts_a_wait_whose_timer_counts_from_the_retry(workflow_clock, world):
    wf.start("ops-timed-wait", {"key": "k"}, id="w1")
    wf.drain()
    workflow_clock.advance("1h")
    wf.drain()
    assert wf.get_status("w1").status == "failed"
    workflow_clock.advance("10h")
    retried_at = workflow_clock.now()
    wf.retry("w1", timeout="1d")
    wf.drain()
    parked = wf.get_status("w1")
    assert parked.status == "suspended"
    assert parked.wake_at == retried_at + timedelta(hours=2)
    assert parked.deadline == retried_at + timedelta(days=1)
    assert [(w.signal, w.key) for w in parked.waits] == [("ops-go", "k")]
    workflow_clock.advance("2h")
    wf.drain()
    done = wf.get_status("w1")
    assert done.status == "completed" and done.output == "timed_out"


def test_retry_past_the_run_timeout_needs_a_timeout(workflow_clock, world):
    wf.start("ops-timed-sleep", None, id="s2")
    wf.drain()
    workflow_clock.advance("1h")
    wf.drain()
    assert wf.get_status("s2").status == "failed"
    with pytest.raises(wf.WorkflowStateError) as raised:
        wf.retry("s2")
    assert raised.value.status_code == 409
    assert wf.get_status("s2").status == "failed"
    assert wf.retry("s2", timeout="3h").deadline == workflow_clock.now() + timedelta(hours=3)


@pytest.mark.parametrize(
    "how", ["completed", "cancelled", "suspended", "pending", "running", "compensating"]
)
def test_retry_refuses_an_instance_that_is_not_failed(workflow_clock, world, how):
    if how == "completed":
        wf.start("ops-two-steps", {}, id="x")
        wf.drain()
    elif how == "cancelled":
        wf.start("wait-once", {"key": "k"}, id="x")
        wf.drain()
        wf.cancel("x")
        wf.drain()
    elif how == "suspended":
        wf.start("wait-once", {"key": "k"}, id="x")
        wf.drain()
    elif how == "pending":
        wf.start("wait-once", {"key": "k"}, id="x")
    else:  # a worker elsewhere holds it
        wf.start("wait-once", {"key": "k"}, id="x")
        WorkflowInstance.objects.filter(pk="x").update(
            status=how, lease_owner="elsewhere", lease_token="t"
        )
    assert wf.get_status("x").status == how
    with pytest.raises(wf.WorkflowStateError) as raised:
        wf.retry("x")
    assert raised.value.status_code == 409
    assert wf.get_status("x").status == how


def test_retry_of_a_failed_instance_whose_deadline_passed_needs_a_timeout(workflow_clock, world):
    # Failed by a step, not by the timeout; but by now it is past its run timeout.
    world.failures["charge"] = 1
    wf.start("ops-two-steps", {}, id="late", timeout="1h")
    wf.drain()
    failed = wf.get_status("late")
    assert failed.status == "failed" and failed.error["name"] == "StepFailedError"
    workflow_clock.advance("2h")
    with pytest.raises(wf.WorkflowStateError):
        wf.retry("late")
    assert wf.retry("late", timeout=None).deadline is None
    wf.drain()
    assert wf.get_status("late").status == "completed"


def test_retry_refuses_a_failed_instance_whose_compensations_ran(workflow_clock, world):
    id = wf.start("order-fulfilment", order(items=[{"product": "mouse-toy", "quantity": 99}])).id
    wf.drain()
    failed = wf.get_status(id, journal=True)
    assert failed.status == "failed"
    assert world.refunds  # the charge was refunded
    with pytest.raises(wf.WorkflowStateError) as raised:
        wf.retry(id)
    assert raised.value.status_code == 409
    after = wf.get_status(id, journal=True)
    assert after.status == "failed" and after.journal == failed.journal


def test_retry_of_an_unknown_id_raises_not_found(workflow_clock):
    with pytest.raises(wf.WorkflowNotFoundError):
        wf.retry("nobody")


def test_retry_of_an_instance_deleted_right_after_it_reopened_raises_not_found(
    workflow_clock, world
):
    failed_two_steps(world)

    def delete_it(sender, event, **kwargs):  # after retry's commit, before its last read
        if event.type == "workflow-retried":
            wf.delete(event.id, force=True)

    workflow_event.connect(delete_it, weak=False)
    try:
        with pytest.raises(wf.WorkflowNotFoundError, match="'r1' was deleted right after"):
            wf.retry("r1")
    finally:
        workflow_event.disconnect(delete_it)
    assert not WorkflowInstance.objects.filter(pk="r1").exists()


def test_retry_runs_an_instance_a_broken_deploy_failed_once_the_fix_is_registered(
    workflow_clock, world
):
    fixed = registry.get("ops-deploy", 1)
    assert fixed is not None

    def broken(ctx, input):  # renamed the first step: replay breaks
        ctx.step("renamed", lambda step: world.mail("u", step.idempotency_key))
        ctx.sleep("nap", "1h")
        return "broken"

    wf.start("ops-deploy", None, id="d1")
    wf.drain()
    assert wf.get_status("d1").status == "suspended"
    registry._definitions[("ops-deploy", 1)] = dataclasses.replace(fixed, run=broken)
    try:
        workflow_clock.advance("1h")
        wf.drain()
        failed = wf.get_status("d1")
        assert failed.status == "failed"
        assert failed.error["name"] == "WorkflowNonDeterminismError"
    finally:
        registry._definitions[("ops-deploy", 1)] = fixed
    wf.retry("d1")
    wf.drain()
    parked = wf.get_status("d1")  # the nap it left starts over
    assert parked.status == "suspended"
    assert parked.wake_at == workflow_clock.now() + timedelta(hours=1)
    workflow_clock.advance("1h")
    wf.drain()
    done = wf.get_status("d1")
    assert done.status == "completed" and done.output == "deployed"
    assert [key for kind, key in world.calls if kind == "mail"] == ["d1:first", "d1:second"]


def compensation_failed(world, id: str, *, cancel: bool) -> None:
    world.failures["refund"] = 1000
    wf.start("ops-undo", {"fail": not cancel}, id=id)
    wf.drain()
    if cancel:
        wf.cancel(id, "changed my mind")
        wf.drain()
    status = wf.get_status(id)
    assert status.status == "compensation_failed", status
    assert calls(world, "release") == 1 and calls(world, "refund") == 1


def test_retry_of_compensation_failed_reruns_only_the_compensations_that_did_not_complete(
    workflow_clock, world
):
    compensation_failed(world, "c1", cancel=False)
    world.failures["refund"] = 0
    reopened = wf.retry("c1")
    assert reopened.status == "compensating"
    wf.drain()
    done = wf.get_status("c1", journal=True)
    assert done.status == "failed", done.error
    assert done.error["name"] == "WorkflowFailedError" and "compensation" not in done.error
    assert calls(world, "release") == 1  # completed: not run again
    assert calls(world, "refund") == 2
    assert entry("c1", "$compensate:charge-payment").attempt == 1  # its attempts back
    assert entry("c1", "$compensate:charge-payment").status == "completed"
    assert [e.name for e in done.journal if e.kind == "retry"] == ["$retry:1"]


def test_retry_of_a_cancel_whose_compensation_failed_ends_cancelled(workflow_clock, world):
    compensation_failed(world, "c2", cancel=True)
    world.failures["refund"] = 0
    wf.retry("c2")
    wf.drain()
    done = wf.get_status("c2")
    assert done.status == "cancelled", done.error
    assert done.error["name"] == "WorkflowCancelledError"
    assert done.error["message"] == "changed my mind"
    assert calls(world, "release") == 1 and calls(world, "refund") == 2


def test_retry_of_compensation_failed_emits_retried_from_compensation_failed(
    workflow_clock, world, events
):
    compensation_failed(world, "c3", cancel=False)
    error = wf.get_status("c3").error
    assert error["compensation"]
    world.failures["refund"] = 0
    wf.retry("c3")
    retried = [e for e in events if e.type == "workflow-retried"]
    assert [(e.data["from"], e.data["error"]) for e in retried] == [("compensation_failed", error)]
    assert entry("c3", "$retry:1").result == {"status": "compensation_failed", "error": error}
