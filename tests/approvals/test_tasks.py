"""External tasks: ctx.task() dispatches once as a step, then waits for complete_task() or
fail_task(); a late or repeated report raises and stores nothing; the timeout retries."""

from __future__ import annotations

import pytest

import django_workflows as wf
from django_workflows.models import Signal
from tests.core.helpers import journal

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(define):
    """The idempotency keys handed to the other system, in order; and workflow "scan"."""
    keys: list[str] = []

    def dispatch(step):
        keys.append(step.idempotency_key)

    @define("scan")
    def scan(ctx, input):
        options = input or {}
        verdict = ctx.task(
            "virus-scan", dispatch, timeout=options.get("timeout"), retry=options.get("retry")
        )
        return {"verdict": verdict}

    return keys


def test_a_task_dispatches_once_and_returns_the_completed_result(workflow_clock, sent, events):
    wf.start("scan", id="t1")
    wf.drain()
    assert len(sent) == 1 and sent[0]
    assert wf.get_status("t1").status == "suspended"
    assert ("$task:virus-scan#1", "task", "pending") in journal("t1")
    assert wf.drain() == 0
    assert wf.complete_task("t1", "virus-scan", {"clean": True}) is None
    wf.drain()
    status = wf.get_status("t1")
    assert status.status == "completed", status.error
    assert status.output == {"verdict": {"clean": True}}
    assert len(sent) == 1  # the replay did not dispatch again
    done = [e.data for e in events if e.type == "task-completed"]
    assert done == [{"task": "virus-scan", "attempt": 1}]


def test_a_repeated_completion_is_refused(workflow_clock, sent):
    wf.start("scan", id="t2")
    wf.drain()
    wf.complete_task("t2", "virus-scan", "first")
    with pytest.raises(wf.WorkflowStateError, match="reported already"):
        wf.complete_task("t2", "virus-scan", "second")
    assert Signal.objects.count() == 1
    wf.drain()
    assert wf.get_status("t2").output == {"verdict": "first"}
    with pytest.raises(wf.WorkflowStateError, match="is completed"):
        wf.complete_task("t2", "virus-scan", "late")
    assert Signal.objects.count() == 1


def test_a_completion_before_the_dispatch_is_refused(workflow_clock, sent):
    wf.start("scan", id="t3")
    with pytest.raises(wf.WorkflowStateError, match="not waiting"):
        wf.complete_task("t3", "virus-scan", "early")
    with pytest.raises(wf.WorkflowStateError, match="not waiting"):
        wf.fail_task("t3", "virus-scan", "early")
    assert not Signal.objects.exists()


def test_a_completion_of_another_task_is_refused(workflow_clock, sent):
    wf.start("scan", id="t4")
    wf.drain()
    with pytest.raises(wf.WorkflowStateError, match="not waiting for task 'virus'"):
        wf.complete_task("t4", "virus", "clean")
    assert not Signal.objects.exists()


def test_fail_task_retries_with_a_new_dispatch_then_fails_like_a_step(workflow_clock, sent):
    wf.start("scan", {"retry": 2}, id="t5")
    wf.drain()
    wf.fail_task("t5", "virus-scan", "scanner crashed")
    wf.drain()
    assert wf.get_status("t5").status == "suspended"  # the retry's backoff
    workflow_clock.advance("10s")
    wf.drain()
    assert sent == ["t5:virus-scan", "t5:virus-scan"]  # dispatched again, the key stable
    with pytest.raises(wf.WorkflowStateError, match="not waiting"):
        wf.fail_task("t5", "other", "x")
    wf.fail_task("t5", "virus-scan", "scanner crashed again")
    wf.drain()
    status = wf.get_status("t5")
    assert status.status == "failed"
    assert status.error["name"] == "StepFailedError"
    assert status.error["step"] == "virus-scan" and status.error["attempts"] == 2
    assert status.error["cause"] == {"name": "TaskFailedError", "message": "scanner crashed again"}


def test_the_workflow_can_catch_a_failed_task(workflow_clock, define):
    @define("catching")
    def catching(ctx, input):
        try:
            return ctx.task("ask", lambda step: None, retry=False)
        except wf.StepFailedError as error:
            return {"failed": error.cause["message"]}

    wf.start("catching", id="catch")
    wf.drain()
    wf.fail_task("catch", "ask", "refused")
    wf.drain()
    assert wf.get_status("catch").output == {"failed": "refused"}


def test_the_timeout_fails_the_attempt_with_step_timeout_and_retries(workflow_clock, sent):
    wf.start("scan", {"timeout": "1m", "retry": 2}, id="t6")
    wf.drain()
    workflow_clock.advance("1m")
    with pytest.raises(wf.WorkflowStateError, match="timed out"):
        wf.complete_task("t6", "virus-scan", "too late")
    assert not Signal.objects.exists()
    wf.drain()  # the timer fires: attempt 1 failed, the backoff starts
    workflow_clock.advance("10s")
    wf.drain()
    assert len(sent) == 2
    workflow_clock.advance("1m")
    wf.drain()
    status = wf.get_status("t6")
    assert status.status == "failed"
    assert status.error["cause"]["name"] == "StepTimeoutError"
    assert status.error["attempts"] == 2


def test_a_completion_in_time_wins_over_the_timeout(workflow_clock, sent):
    wf.start("scan", {"timeout": "1m"}, id="t7")
    wf.drain()
    workflow_clock.advance("59s")
    wf.complete_task("t7", "virus-scan", "clean")
    workflow_clock.advance("5m")
    wf.drain()
    assert wf.get_status("t7").output == {"verdict": "clean"}


def test_a_dispatch_that_raises_is_retried_as_a_step(workflow_clock, define):
    calls = []

    def flaky(step):
        calls.append(step.attempt)
        if len(calls) == 1:
            raise ConnectionError("queue down")

    @define("flaky-dispatch")
    def flaky_dispatch(ctx, input):
        return ctx.task("job", flaky)

    wf.start("flaky-dispatch", id="t8")
    wf.drain()
    workflow_clock.advance("10s")
    wf.drain()
    assert calls == [1, 2]  # the second dispatch is the task's attempt 2
    with pytest.raises(wf.WorkflowStateError, match="attempt 1"):
        wf.complete_task("t8", "job", 4, attempt=1)
    wf.complete_task("t8", "job", 5, attempt=2)
    wf.drain()
    assert wf.get_status("t8").output == 5


def test_bad_input_is_refused_before_anything_is_stored(workflow_clock, sent):
    wf.start("scan", id="bad")
    wf.drain()
    with pytest.raises(TypeError, match="JSON"):
        wf.complete_task("bad", "virus-scan", object())
    with pytest.raises(TypeError, match="message"):
        wf.fail_task("bad", "virus-scan", 42)
    with pytest.raises(ValueError, match="message"):
        wf.fail_task("bad", "virus-scan", "x" * 100_000)
    with pytest.raises(TypeError, match="name"):
        wf.complete_task("bad", None, 1)
    with pytest.raises(TypeError, match="id"):
        wf.complete_task(None, "virus-scan", 1)
    with pytest.raises(wf.WorkflowNotFoundError):
        wf.complete_task("nobody", "virus-scan", 1)
    assert not Signal.objects.exists()
    assert wf.get_status("bad").status == "suspended"


def test_a_bad_dispatch_or_option_fails_the_definition(workflow_clock, define):
    @define("no-dispatch")
    def no_dispatch(ctx, input):
        ctx.task("job", lambda: None)

    @define("bad-timeout")
    def bad_timeout(ctx, input):
        ctx.task("job", lambda step: None, timeout="soon")

    wf.start("no-dispatch", id="nd")
    wf.start("bad-timeout", id="bt")
    wf.drain()
    assert "must take 1 argument" in wf.get_status("nd").error["message"]
    assert wf.get_status("bt").status == "failed"


def test_names_too_long_for_the_journal_fail_the_definition(workflow_clock, define):
    @define("long-task")
    def long_task(ctx, input):
        ctx.task("t" * 500, lambda step: None)

    @define("long-breakpoint")
    def long_breakpoint(ctx, input):
        ctx.breakpoint("b" * 513)

    wf.start("long-task", id="lt")
    wf.start("long-breakpoint", id="lb")
    wf.drain()
    for id in ("lt", "lb"):
        status = wf.get_status(id)
        assert status.status == "failed"
        assert "characters long" in status.error["message"]


def test_a_message_with_a_nul_is_refused(workflow_clock, sent):
    wf.start("scan", id="nul")
    wf.drain()
    with pytest.raises(ValueError, match="message"):
        wf.fail_task("nul", "virus-scan", "bad\x00byte")
    assert not Signal.objects.exists()


def test_a_refused_report_stores_nothing_inside_the_callers_transaction(workflow_clock, sent):
    from django.db import transaction

    wf.start("scan", id="tx")
    with transaction.atomic():
        with pytest.raises(wf.WorkflowStateError):
            wf.complete_task("tx", "virus-scan", 1)
        wf.signal("unrelated")
    assert list(Signal.objects.values_list("name", flat=True)) == ["unrelated"]


def test_the_dispatch_key_is_the_instance_id_and_the_task_name(workflow_clock, sent):
    wf.start("scan", id="key")
    wf.drain()
    assert sent == ["key:virus-scan"]


@pytest.fixture
def attempts(define):
    """The step.attempt of each dispatch of workflow "attempts", in order."""
    seen: list[int] = []

    @define("attempts")
    def attempts(ctx, input):
        return ctx.task("job", lambda step: seen.append(step.attempt), retry=input or 3)

    return seen


def test_each_dispatch_after_a_failed_report_is_the_next_attempt(workflow_clock, attempts):
    wf.start("attempts", id="n1")
    wf.drain()
    wf.fail_task("n1", "job", "busy", attempt=1)
    wf.drain()
    workflow_clock.advance("10s")
    wf.drain()
    assert attempts == [1, 2]
    wf.fail_task("n1", "job", "busy again", attempt=2)
    wf.drain()
    workflow_clock.advance("10s")
    wf.drain()
    assert attempts == [1, 2, 3]
    wf.complete_task("n1", "job", "done", attempt=3)
    wf.drain()
    assert wf.get_status("n1").output == "done"


def test_a_report_for_another_attempt_is_refused(workflow_clock, attempts):
    wf.start("attempts", id="n2")
    wf.drain()
    with pytest.raises(wf.WorkflowStateError, match="attempt 2"):
        wf.complete_task("n2", "job", "early", attempt=2)
    wf.fail_task("n2", "job", "busy", attempt=1)
    wf.drain()
    workflow_clock.advance("10s")
    wf.drain()
    # Attempt 1's failure, delivered again, does not fail attempt 2.
    with pytest.raises(wf.WorkflowStateError, match="attempt 1"):
        wf.fail_task("n2", "job", "busy", attempt=1)
    with pytest.raises(wf.WorkflowStateError, match="attempt 1"):
        wf.complete_task("n2", "job", "stale", attempt=1)
    assert Signal.objects.count() == 1
    wf.complete_task("n2", "job", "done", attempt=2)
    wf.drain()
    assert wf.get_status("n2").output == "done"


def test_a_bad_attempt_is_refused(workflow_clock, attempts):
    wf.start("attempts", id="n3")
    wf.drain()
    with pytest.raises(TypeError, match="attempt"):
        wf.complete_task("n3", "job", 1, attempt="1")
    with pytest.raises(ValueError, match="attempt"):
        wf.fail_task("n3", "job", "x", attempt=0)
    assert not Signal.objects.exists()


def test_retry_gives_a_task_that_gave_up_its_attempts_back(workflow_clock, attempts):
    wf.start("attempts", 2, id="r1")
    wf.drain()
    wf.fail_task("r1", "job", "busy")
    wf.drain()
    workflow_clock.advance("10s")
    wf.drain()
    wf.fail_task("r1", "job", "busy again")
    wf.drain()
    assert wf.get_status("r1").status == "failed"
    wf.retry("r1")
    wf.drain()
    assert wf.get_status("r1").status == "suspended"
    assert attempts == [1, 2, 3]  # dispatched again at once
    with pytest.raises(wf.WorkflowStateError, match="attempt 2"):
        wf.complete_task("r1", "job", "stale", attempt=2)
    wf.fail_task("r1", "job", "busy a third time", attempt=3)
    wf.drain()
    workflow_clock.advance("10s")
    wf.drain()
    assert attempts == [1, 2, 3, 4]  # the policy's two attempts, counted from the retry
    wf.complete_task("r1", "job", "done", attempt=4)
    wf.drain()
    assert wf.get_status("r1").output == "done"


def test_retry_gives_a_timed_out_task_its_attempts_back(workflow_clock, define):
    dispatched = []

    @define("slow")
    def slow(ctx, input):
        return ctx.task("job", lambda step: dispatched.append(step.attempt), timeout="1m", retry=1)

    wf.start("slow", id="r2")
    wf.drain()
    workflow_clock.advance("1m")
    wf.drain()
    assert wf.get_status("r2").error["cause"]["name"] == "StepTimeoutError"
    wf.retry("r2")
    wf.drain()
    assert dispatched == [1, 2]
    wf.complete_task("r2", "job", "done")
    wf.drain()
    assert wf.get_status("r2").output == "done"


def test_retry_gives_a_task_whose_dispatch_gave_up_its_attempts_back(workflow_clock, define):
    calls = []

    def broken(step):
        calls.append(step.attempt)
        if len(calls) < 3:
            raise ConnectionError("queue down")

    @define("broken-dispatch")
    def broken_dispatch(ctx, input):
        return ctx.task("job", broken, retry=1)

    wf.start("broken-dispatch", id="r3")
    wf.drain()
    assert wf.get_status("r3").status == "failed"
    wf.retry("r3")
    wf.drain()
    assert wf.get_status("r3").status == "failed"
    wf.retry("r3")
    wf.drain()
    assert calls == [1, 2, 3]
    wf.complete_task("r3", "job", "done", attempt=3)
    wf.drain()
    assert wf.get_status("r3").output == "done"


def test_a_task_reached_again_after_continue_as_new_in_the_same_tick(workflow_clock, define):
    @define("task-loop")
    def task_loop(ctx, input):
        result = ctx.task("job", lambda step: None)
        if input is None:
            ctx.continue_as_new("again")
        return result

    wf.start("task-loop", id="g1")
    wf.drain()
    wf.complete_task("g1", "job", "first")
    wf.drain()
    assert wf.get_status("g1").generation == 1
    assert wf.get_status("g1").status == "suspended"
    wf.complete_task("g1", "job", "second")  # the clock has not moved
    wf.drain()
    assert wf.get_status("g1").output == "second"


def test_retry_runs_a_dispatch_its_run_stopped_in_as_the_same_attempt(workflow_clock, define):
    from django_workflows.models import JournalEntry

    dispatched = []

    @define("stopped")
    def stopped(ctx, input):
        return ctx.task("job", lambda step: dispatched.append(step.attempt))

    wf.start("stopped", id="r4", timeout="1h")
    wf.drain()
    wf.fail_task("r4", "job", "busy", attempt=1)
    wf.drain()
    workflow_clock.advance("10s")
    wf.drain()
    assert dispatched == [1, 2]
    # As a worker that died in attempt 2's dispatch leaves the journal: the step running.
    JournalEntry.objects.filter(instance_id="r4", name="$task:job#2").delete()
    row = JournalEntry.objects.get(instance_id="r4", name="$task:job#2:dispatch")
    row.document = {**row.document, "status": "running", "result": None}
    row.save()
    workflow_clock.advance("1h")
    wf.drain()
    assert wf.get_status("r4").error["name"] == "WorkflowTimeoutError"
    wf.retry("r4", timeout=None)
    wf.drain()
    assert dispatched == [1, 2, 2]  # attempt 2 dispatched again, as attempt 2
    wf.complete_task("r4", "job", "done", attempt=2)
    wf.drain()
    assert wf.get_status("r4").output == "done"
