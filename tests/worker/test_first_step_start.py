"""The first step's start: until an instance has journaled anything, its claim stands in for the
start of its first step, which rides with the execution's next write. Each claim before the
current one then counts as an attempt of that step that stopped with its worker, as a journaled
start would, but never as its last attempt, whose start is written; a claim handed back before
anything ran does not count."""

from __future__ import annotations

import threading

import pytest

import django_workflows as wf
from django_workflows.models import JournalEntry, WorkflowInstance
from django_workflows.store import instances as store
from tests.helpers import claim_ids, wait_until, worker_thread

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def writes(monkeypatch):
    """The lease holders' writes (store.instances.write) made from now on, counted."""
    calls: list[str] = []
    write = store.write

    def counted(using, id, *args, **kwargs):
        calls.append(id)
        return write(using, id, *args, **kwargs)

    monkeypatch.setattr(store, "write", counted)
    return calls


def test_a_one_step_execution_writes_once(define, writes):
    @define("one-step")
    def one_step(ctx, _):
        return ctx.step("work", lambda step: step.attempt)

    wf.start("one-step", id="o1")
    assert wf.drain() == 1
    assert writes == ["o1"]  # the step's start and end, the output and the release
    status = wf.get_status("o1", journal=True)
    assert status.output == 1
    [entry] = status.journal
    assert (entry.name, entry.status, entry.attempt) == ("work", "completed", 1)
    assert entry.started_at is not None and entry.finished_at >= entry.started_at


def test_only_the_first_step_of_an_untouched_journal_starts_unwritten(
    define, writes, workflow_clock
):
    @define("three-steps")
    def three_steps(ctx, _):
        ctx.step("a", lambda step: 1)
        ctx.sleep("nap", "1m")
        ctx.step("b", lambda step: 2)
        return ctx.step("c", lambda step: 3)

    wf.start("three-steps", id="t1")
    wf.drain()
    assert writes == ["t1"]  # a's start and end ride with the sleep's release
    writes.clear()
    workflow_clock.advance("1m")
    wf.drain()
    # The journal holds entries now: b's start is written, then c's (with b's end), then the end.
    assert writes == ["t1"] * 3
    assert wf.get_status("t1").output == 3


def test_a_claim_that_never_wrote_counts_as_an_attempt(define, workflow_clock):
    attempts: list[int] = []

    @define("counted")
    def counted(ctx, _):
        return ctx.step("work", lambda step: attempts.append(step.attempt) or step.attempt)

    wf.start("counted", id="c1")
    # A worker leases it and dies before its first write: the journal shows nothing of it.
    assert claim_ids(["counted"], limit=1, lease="10s") == ["c1"]
    assert not JournalEntry.objects.filter(instance_id="c1").exists()
    workflow_clock.advance("11s")
    assert wf.drain() == 1
    assert attempts == [2]
    status = wf.get_status("c1", journal=True)
    assert (status.status, status.output, status.journal[0].attempt) == ("completed", 2, 2)


def test_a_last_attempt_writes_its_start_first(define, workflow_clock, writes):
    # A claim can stop before its step starts: counted as the step's last attempt, it would
    # fail a step that never ran. So a step of one attempt (a Django task's default) writes
    # its start before it runs, and a claim that wrote nothing did not run it.
    attempts: list[int] = []

    @define("once")
    def once(ctx, _):
        return ctx.step("charge", lambda step: attempts.append(step.attempt) or 1, retry=1)

    wf.start("once", id="f1")
    assert claim_ids(["once"], limit=1, lease="10s") == ["f1"]
    workflow_clock.advance("11s")
    assert wf.drain() == 1
    assert attempts == [1] and writes == ["f1", "f1"]  # the start, then the end
    assert wf.get_status("f1").output == 1


def test_claims_that_never_wrote_leave_the_last_attempt(define, workflow_clock):
    attempts: list[int] = []

    @define("twice")
    def twice(ctx, _):
        return ctx.step("work", lambda step: attempts.append(step.attempt) or 1, retry=2)

    wf.start("twice", id="f2")
    for _ in range(3):
        assert claim_ids(["twice"], limit=1, lease="10s") == ["f2"]
        workflow_clock.advance("11s")
    assert wf.drain() == 1
    assert attempts == [2]  # the first attempt stopped; the last one runs, its start written
    status = wf.get_status("f2", journal=True)
    assert (status.status, status.journal[0].attempt) == ("completed", 2)


def test_a_claim_handed_back_before_the_first_step_is_not_an_attempt(define):
    attempts: list[int] = []
    entered, go = threading.Event(), threading.Event()

    @define("late-start")
    def late_start(ctx, _):
        entered.set()
        go.wait(10)  # the worker is told to stop meanwhile
        return ctx.step("work", lambda step: attempts.append(step.attempt) or step.attempt)

    wf.start("late-start", id="h1")
    try:
        with worker_thread(poll_interval="50ms", shutdown_timeout="5s") as worker:
            assert wait_until(entered.is_set, 10)
            threading.Timer(0.3, go.set).start()  # once stop() below has begun
        assert worker.left_behind == []
    finally:
        go.set()
    row = WorkflowInstance.objects.get(pk="h1")
    assert (row.status, row.lease_token, row.runs, attempts) == ("suspended", None, 0, [])
    assert wf.drain() == 1
    assert attempts == [1]
    assert wf.get_status("h1").output == 1


def test_a_hand_back_inside_the_first_step_writes_its_start(define):
    attempts: list[int] = []
    inside = threading.Event()

    @define("handed-back")
    def handed_back(ctx, _):
        def work(step):
            attempts.append(step.attempt)
            if step.attempt == 1:
                inside.set()
                step.cancelled.wait(10)  # stop() cancels it
                raise RuntimeError("stopped")
            return step.attempt

        return ctx.step("work", work)

    wf.start("handed-back", id="h2")
    with worker_thread(poll_interval="50ms", shutdown_timeout="5s"):
        assert wait_until(inside.is_set, 10)
    entry = JournalEntry.objects.get(instance_id="h2", name="work").document
    assert (entry["status"], entry["attempt"]) == ("running", 1)
    assert wf.drain() == 1
    assert attempts[-1] == 2 and wf.get_status("h2").output == 2
