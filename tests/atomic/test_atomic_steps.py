"""ctx.step(..., atomic=True): the function's writes and the step's journal entry commit in one
transaction on the workflows' alias; a failed attempt rolls its writes back before the retry."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

import django_workflows as wf
from django_workflows.models import JournalEntry
from tests.procapp.models import Charge, StepRun

pytestmark = pytest.mark.django_db(transaction=True)

NO_WAIT = {"attempts": 3, "delay": "0s"}


def charge(instance_id: str, seen: dict, fail_first: int = 0):
    def run(step):
        seen.setdefault("in_atomic", []).append(transaction.get_connection().in_atomic_block)
        StepRun.objects.create(instance_id=instance_id, step="charge", pid=step.attempt, started=0)
        Charge.objects.create(key=f"{step.idempotency_key}:{step.attempt}", order_id=instance_id)
        # What the journal holds while the function runs: the attempt's start, not its end.
        owner, _, name = step.idempotency_key.partition(":")
        seen.setdefault("entry", []).append(
            JournalEntry.objects.get(instance_id=owner, name=name).document["status"]
        )
        if step.attempt <= fail_first:
            raise RuntimeError(f"the card network timed out (attempt {step.attempt})")
        return {"charged": step.attempt}

    return run


def test_an_atomic_step_runs_inside_a_transaction_and_commits_its_row_with_its_entry(define):
    seen: dict = {}

    @define("atomic-one")
    def one(ctx, input):
        return ctx.step("charge", charge(ctx.instance_id, seen), atomic=True)

    wf.start("atomic-one", None, id="at-1")
    assert wf.drain() == 1
    status = wf.get_status("at-1", journal=True)
    assert status.status == "completed", status.error
    assert status.output == {"charged": 1}
    assert seen["in_atomic"] == [True]
    assert seen["entry"] == ["running"]
    assert Charge.objects.filter(order_id="at-1").count() == 1
    step = next(e for e in status.journal if e.name == "charge")
    assert step.status == "completed" and step.attempt == 1


def test_a_step_that_is_not_atomic_runs_outside_any_transaction(define):
    seen: dict = {}

    @define("plain-one")
    def one(ctx, input):
        return ctx.step("charge", charge(ctx.instance_id, seen))

    wf.start("plain-one", None, id="pl-1")
    assert wf.drain() == 1
    assert seen["in_atomic"] == [False]


def test_a_failed_attempt_rolls_its_writes_back_and_the_retry_writes_once(define):
    seen: dict = {}

    @define("atomic-retry")
    def retried(ctx, input):
        return ctx.step(
            "charge", charge(ctx.instance_id, seen, fail_first=2), atomic=True, retry=NO_WAIT
        )

    wf.start("atomic-retry", None, id="at-retry")
    for _ in range(5):
        wf.drain()
    status = wf.get_status("at-retry", journal=True)
    assert status.status == "completed", status.error
    assert status.output == {"charged": 3}
    # The two failed attempts wrote rows, and their transactions took them back.
    assert list(Charge.objects.filter(order_id="at-retry").values_list("key", flat=True)) == [
        "at-retry:charge:3"
    ]
    assert list(StepRun.objects.filter(instance_id="at-retry").values_list("pid", flat=True)) == [3]
    step = next(e for e in status.journal if e.name == "charge")
    assert step.attempt == 3


def test_a_step_that_gives_up_leaves_none_of_its_writes(define):
    seen: dict = {}

    @define("atomic-gives-up")
    def gives_up(ctx, input):
        return ctx.step(
            "charge",
            charge(ctx.instance_id, seen, fail_first=9),
            atomic=True,
            retry={"attempts": 2, "delay": "0s"},
        )

    wf.start("atomic-gives-up", None, id="at-fail")
    for _ in range(4):
        wf.drain()
    status = wf.get_status("at-fail")
    assert status.status == "failed"
    assert "card network" in status.error["message"]
    assert not Charge.objects.filter(order_id="at-fail").exists()
    assert seen["in_atomic"] == [True, True]


def test_a_lease_lost_during_the_function_rolls_its_writes_back(define):
    """The entry's write is fenced by the lease token inside the transaction: when another
    worker took the instance meanwhile, the function's rows go with the refused write."""
    from django_workflows.models import WorkflowInstance

    if connection.vendor == "sqlite":
        pytest.skip("SQLite: the step's transaction holds the one write lock another worker needs")

    @define("atomic-lease")
    def leased(ctx, input):
        def steal_then_write(step):
            Charge.objects.create(key=step.idempotency_key, order_id=ctx.instance_id)
            # Another worker's claim, committed on another connection: the token changes.
            thread = threading.Thread(
                target=lambda: (
                    WorkflowInstance.objects.filter(pk=ctx.instance_id).update(
                        lease_token="someone-else"
                    ),
                    connection.close(),
                )
            )
            thread.start()
            thread.join()
            return "charged"

        return ctx.step("charge", steal_then_write, atomic=True)

    wf.start("atomic-lease", None, id="at-lease")
    wf.drain()
    assert not Charge.objects.filter(order_id="at-lease").exists()
    doc = JournalEntry.objects.get(instance_id="at-lease", name="charge").document
    assert doc["status"] == "running"  # the start only: the completion was rolled back


def test_an_atomic_step_of_an_async_workflow_runs_its_sync_function_in_the_transaction(define):
    seen: dict = {}

    @define("atomic-async")
    async def in_async(ctx, input):
        return await ctx.step("charge", charge(ctx.instance_id, seen), atomic=True)

    wf.start("atomic-async", None, id="at-async")
    assert wf.drain() == 1
    status = wf.get_status("at-async")
    assert status.status == "completed", status.error
    assert seen["in_atomic"] == [True]
    assert Charge.objects.filter(order_id="at-async").count() == 1


def test_atomic_steps_in_gather_branches_each_commit_on_their_own_thread(define):
    seen: dict = {}

    @define("atomic-gather")
    def gathered(ctx, input):
        return ctx.gather(
            lambda: ctx.step("a", charge(ctx.instance_id + "-a", seen), atomic=True),
            lambda: ctx.step("b", charge(ctx.instance_id + "-b", seen), atomic=True),
        )

    wf.start("atomic-gather", None, id="at-g")
    for _ in range(3):
        wf.drain()
    status = wf.get_status("at-g", journal=True)
    assert status.status == "completed", (status.error, status.journal, status.wake_at)
    assert Charge.objects.filter(order_id__startswith="at-g-").count() == 2
    assert seen["in_atomic"] == [True, True]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeout": "5s"}, "has a timeout"),
        ({"heartbeat_timeout": "5s"}, "has a heartbeat_timeout"),
        ({"atomic": "yes"}, "atomic must be True or False"),
    ],
)
def test_bad_atomic_options_fail_the_instance_with_a_definition_error(define, options, message):
    ran = []

    @define("atomic-bad")
    def bad(ctx, input):
        return ctx.step("charge", lambda step: ran.append(1), **{"atomic": True, **options})

    wf.start("atomic-bad", None, id="at-bad")
    wf.drain()
    status = wf.get_status("at-bad")
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowDefinitionError"
    assert message in status.error["message"]
    assert ran == []  # refused before it ran
    assert not JournalEntry.objects.filter(instance_id="at-bad", name="charge").exists()


def test_an_async_function_for_an_atomic_step_is_refused(define):
    async def charge_async(step):
        return 1

    @define("atomic-async-fn")
    async def bad(ctx, input):
        return await ctx.step("charge", charge_async, atomic=True)

    wf.start("atomic-async-fn", None, id="at-async-fn")
    wf.drain()
    status = wf.get_status("at-async-fn")
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowDefinitionError"
    assert "async def" in status.error["message"]


def test_an_atomic_steps_heartbeat_keeps_its_progress_with_the_attempt(define):
    """step.heartbeat(progress) in an atomic step writes nothing outside its transaction: the
    attempt sees its own progress, a failed attempt's goes with its rolled-back rows, and it
    never waits for the execution's thread (a gather branch on SQLite would, for the write
    lock the branch's own transaction holds)."""
    seen: list = []

    def pack(step):
        seen.append((step.attempt, step.progress))
        Charge.objects.create(key=f"{step.idempotency_key}:{step.attempt}", order_id="at-hb")
        step.heartbeat({"packed": step.attempt})
        assert step.progress == {"packed": step.attempt}
        if step.attempt == 1:
            raise RuntimeError("the scale is offline")
        return "packed"

    @define("atomic-heartbeat")
    def gathered(ctx, input):
        return ctx.gather(
            lambda: ctx.step("pack", pack, atomic=True, retry=NO_WAIT),
            lambda: ctx.step("label", lambda step: "labelled", atomic=True),
        )

    wf.start("atomic-heartbeat", None, id="at-hb")
    for _ in range(3):
        wf.drain()
    status = wf.get_status("at-hb")
    assert status.status == "completed", status.error
    assert status.output == ["packed", "labelled"]
    assert seen == [(1, None), (2, None)]  # the failed attempt's progress went with its rows
    assert list(Charge.objects.filter(order_id="at-hb").values_list("key", flat=True)) == [
        "at-hb:pack:2"
    ]
