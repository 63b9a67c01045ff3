"""Child workflows: the rules a review against the docs page found missing, one test each."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.db import DatabaseError

import django_workflows as wf
from django_workflows.engine import starts as instances
from django_workflows.models import WorkflowInstance

pytestmark = pytest.mark.django_db


def drain_all(clock, times=4):
    for _ in range(times):
        wf.drain()
        clock.advance("1s")


def test_a_childs_result_is_its_end_even_after_the_child_won_wait_for_any(define, workflow_clock):
    """The handle's result() waits for the child: a child that ended, and won a race in
    wait_for_any(), has ended; result() returns its output, as often as it is called."""

    @define("quick-kid")
    def quick(ctx, input):
        return "done"

    @define("race-then-result")
    def parent(ctx, input):
        child = ctx.start_child("quick-kid", {})
        outcome = ctx.wait_for_any("first", child=child, timeout=ctx.timer("1h"))
        return [outcome.key, outcome.value, child.result(), child.result()]

    wf.start("race-then-result", {}, id="rtr")
    drain_all(workflow_clock)
    status = wf.get_status("rtr")
    assert (status.status, status.output, status.error) == (
        "completed",
        ["child", "done", "done", "done"],
        None,
    )


def test_default_child_ids_in_gather_branches_find_each_branchs_own_child_on_replay(
    define, workflow_clock
):
    """A replay reaches the children of gather() branches in another order than the first run
    did: each branch still gets its own child back, not its sibling's."""

    @define("parcel")
    def parcel(ctx, input):
        ctx.sleep("transit", "1h")
        return input["box"]

    @define("two-parcels")
    def two(ctx, input):
        def first():
            # The first run reaches this branch's child last; the replay, first.
            time.sleep(0.3 if ctx.run == 1 else 0)
            return ctx.execute_child("parcel", {"box": "A"})

        def second():
            time.sleep(0 if ctx.run == 1 else 0.3)
            return ctx.execute_child("parcel", {"box": "B"})

        return ctx.gather(first, second)

    wf.start("two-parcels", {}, id="tp")
    wf.drain()
    assert {i.input["box"]: i.id for i in wf.list_instances(parent_id="tp")} == {
        "B": "tp/parcel#1",
        "A": "tp/parcel#2",
    }
    workflow_clock.advance("1h")
    drain_all(workflow_clock)
    status = wf.get_status("tp")
    assert (status.status, status.output) == ("completed", ["A", "B"]), status.error


def test_a_new_default_child_id_in_a_branch_never_takes_a_siblings_journaled_child(
    define, workflow_clock
):
    """A branch that starts its child in a later run than its sibling did must start its own
    child, even when it gets there before the sibling's replay."""

    @define("parcel2")
    def parcel(ctx, input):
        return input["box"]

    @define("late-parcel")
    def late(ctx, input):
        def first():
            time.sleep(0 if ctx.run == 1 else 0.3)  # replayed last
            return ctx.execute_child("parcel2", {"box": "A"})

        def second():
            ctx.sleep("nap", "1h")  # starts its child in the second run
            return ctx.execute_child("parcel2", {"box": "B"})

        return ctx.gather(first, second)

    wf.start("late-parcel", {}, id="lp")
    drain_all(workflow_clock)
    workflow_clock.advance("1h")
    drain_all(workflow_clock)
    status = wf.get_status("lp")
    assert (status.status, status.output) == ("completed", ["A", "B"]), status.error
    boxes = sorted(i.input["box"] for i in wf.list_instances(parent_id="lp"))
    assert boxes == ["A", "B"]


@pytest.mark.parametrize("undone", [False, True])
def test_a_parent_never_ends_or_compensates_without_closing_its_children(
    define, workflow_clock, monkeypatch, undone
):
    """parent_close is applied whenever the parent ends or starts compensating: when closing
    its children fails (a crash, the database gone for a moment), the parent does not end
    without it; its execution stops and runs again once its lease expires."""

    @define("napper")
    def napper(ctx, input):
        ctx.sleep("nap", "30d")

    seen = []  # whether the child had been told to cancel when the parent's undo ran

    def refund(result, step):
        seen.append(WorkflowInstance.objects.get(pk="napper-1").cancel_requested)

    @define("short-parent")
    def parent(ctx, input):
        ctx.step("charge", lambda step: "c1", compensate=refund)
        ctx.start_child("napper", {}, id="napper-1")
        if undone:
            ctx.fail("Changed my mind.")
        return "done"

    real_cancel, calls = instances.request_cancel, []

    def flaky_cancel(id, reason=None, **kwargs):
        calls.append(id)
        if len(calls) == 1:
            raise DatabaseError("connection lost")
        return real_cancel(id, reason, **kwargs)

    monkeypatch.setattr(instances, "request_cancel", flaky_cancel)
    wf.start("short-parent", {}, id="sp")
    wf.drain()
    workflow_clock.advance("1m")  # past the lease of the execution that stopped
    drain_all(workflow_clock)
    assert wf.get_status("sp").status == ("failed" if undone else "completed")
    child = wf.get_status("napper-1")
    assert child.status == "cancelled" and "'sp'" in child.error["message"]
    assert seen == ([True] if undone else [])


@pytest.mark.parametrize(
    "end, status, cause",
    [
        ("fail", "failed", "WorkflowFailedError"),
        ("cancel", "cancelled", "WorkflowCancelledError"),
        ("terminate", "cancelled", "WorkflowTerminatedError"),
        ("timeout", "failed", "WorkflowTimeoutError"),
    ],
)
def test_a_child_that_fails_is_cancelled_terminated_or_times_out_raises_in_the_parent(
    define, workflow_clock, end, status, cause
):
    """ChildWorkflowFailedError carries the child's workflow, instance id, status and error."""

    @define("ending-kid")
    def kid(ctx, input):
        ctx.wait_for_signal("go", "kid.go", key="k")
        ctx.fail("Gave up.")

    @define("watching-parent")
    def parent(ctx, input):
        try:
            ctx.execute_child("ending-kid", {}, id="ek", timeout="1h")
        except wf.ChildWorkflowFailedError as error:
            assert isinstance(error, wf.WorkflowFailedError)
            return [error.workflow, error.instance_id, error.status, error.cause["name"]]

    wf.start("watching-parent", {}, id="wp2")
    wf.drain()
    assert wf.get_status("ek").deadline == workflow_clock.now() + timedelta(hours=1)
    if end == "fail":
        wf.signal("kid.go", None, key="k")
    elif end == "cancel":
        wf.cancel("ek", reason="Support cancelled it.")
    elif end == "terminate":
        wf.terminate("ek")
    else:
        workflow_clock.advance("1h")
    drain_all(workflow_clock)
    assert wf.get_status("wp2").output == ["ending-kid", "ek", status, cause]


def test_child_options_reach_the_child(define, workflow_clock):
    """version, timeout, priority, concurrency_key and rate_limit_key, as start() takes them."""

    @define("opts-kid", version=1)
    def kid_v1(ctx, input):
        return 1

    @define(
        "opts-kid",
        version=2,
        concurrency=wf.Concurrency(5, key=lambda input: "computed"),
        rate_limit=wf.RateLimit(5, "1m", key=lambda input: "computed"),
    )
    def kid_v2(ctx, input):
        return 2

    @define("opts-parent")
    def parent(ctx, input):
        return [
            ctx.execute_child("opts-kid", {}, id="v1", version=1),
            ctx.execute_child(
                "opts-kid", {}, id="v2", concurrency_key="ck", rate_limit_key="rk", priority=9
            ),
            ctx.execute_child("opts-kid", {}, id="computed"),
        ]

    wf.start("opts-parent", {}, id="op", priority=4)
    drain_all(workflow_clock, 6)
    assert wf.get_status("op").output == [1, 2, 2]
    rows = {
        row.id: (row.version, row.priority, row.concurrency_key, row.rate_limit_key)
        for row in WorkflowInstance.objects.filter(parent_id="op")
    }
    assert rows == {
        "v1": (1, 4, None, None),
        "v2": (2, 9, "ck", "rk"),
        "computed": (2, 4, "computed", "computed"),
    }


@pytest.mark.parametrize("how", ["terminate", "timeout"])
def test_a_parent_terminated_or_timed_out_while_its_child_runs_closes_it(
    define, workflow_clock, how
):
    """Its children get their parent_close, as for any end."""

    @define("long-kid")
    def kid(ctx, input):
        ctx.sleep("nap", "30d")

    @define("impatient-parent")
    def parent(ctx, input):
        ctx.execute_child("long-kid", {}, id="lk-cancel")

    @define("impatient-parent-2")
    def parent2(ctx, input):
        ctx.start_child("long-kid", {}, id="lk-terminate", parent_close="terminate")
        ctx.execute_child("long-kid", {}, id="lk-abandon", parent_close="abandon")

    wf.start("impatient-parent", {}, id="ip", timeout="1h")
    wf.start("impatient-parent-2", {}, id="ip2", timeout="1h")
    drain_all(workflow_clock)
    if how == "terminate":
        wf.terminate("ip", "Stop.")
        wf.terminate("ip2", "Stop.")
    else:
        workflow_clock.advance("1h")
    drain_all(workflow_clock)
    ended = "cancelled" if how == "terminate" else "failed"
    assert wf.get_status("ip").status == wf.get_status("ip2").status == ended
    kids = {
        k.id: (k.status, (k.error or {}).get("name")) for k in wf.list_instances(parent_id="ip")
    }
    kids.update(
        {k.id: (k.status, (k.error or {}).get("name")) for k in wf.list_instances(parent_id="ip2")}
    )
    assert kids == {
        "lk-cancel": ("cancelled", "WorkflowCancelledError"),
        "lk-terminate": ("cancelled", "WorkflowTerminatedError"),
        "lk-abandon": ("suspended", None),
    }


def test_retry_of_a_parent_that_timed_out_waiting_for_its_child_waits_again(define, workflow_clock):
    """retry(): the waits the instance left behind start over, the wait for a child's end too;
    an abandoned child keeps running, and the retried parent gets its output."""

    @define("slow-kid")
    def kid(ctx, input):
        return ctx.wait_for_signal("go", "slow-kid.go", key="sk")

    @define("timed-parent")
    def parent(ctx, input):
        return ctx.execute_child("slow-kid", {}, id="sk", parent_close="abandon")

    wf.start("timed-parent", {}, id="tpar", timeout="1h")
    drain_all(workflow_clock)
    workflow_clock.advance("1h")
    drain_all(workflow_clock)
    assert wf.get_status("tpar").error["name"] == "WorkflowTimeoutError"
    assert wf.get_status("sk").status == "suspended"
    wf.retry("tpar", timeout=None)
    drain_all(workflow_clock)
    [waiting] = [e for e in wf.get_status("tpar", journal=True).journal if e.name == "$result:sk"]
    assert (wf.get_status("tpar").status, waiting.status) == ("suspended", "pending")
    wf.signal("slow-kid.go", "parcel", key="sk")
    drain_all(workflow_clock)
    assert wf.get_status("tpar").output == "parcel"


def test_a_parent_deleted_with_force_closes_its_children(define, workflow_clock):
    """A force delete ends the parent without its compensations; its children still get their
    parent_close, as for any end, rather than running on for a parent that is gone."""
    undone = []

    @define("orphan-kid")
    def kid(ctx, input):
        ctx.step("book", lambda step: input, compensate=lambda result, step: undone.append(result))
        ctx.sleep("nap", "30d")

    @define("deleted-parent")
    def parent(ctx, input):
        ctx.start_child("orphan-kid", "cancel", id="dk-cancel")
        ctx.start_child("orphan-kid", "terminate", id="dk-terminate", parent_close="terminate")
        ctx.execute_child("orphan-kid", "abandon", id="dk-abandon", parent_close="abandon")

    wf.start("deleted-parent", {}, id="dp")
    drain_all(workflow_clock)
    assert wf.delete("dp", force=True)
    drain_all(workflow_clock)
    kids = {
        id: (s.status, (s.error or {}).get("name"))
        for id in ("dk-cancel", "dk-terminate", "dk-abandon")
        for s in [wf.get_status(id)]
    }
    assert kids == {
        "dk-cancel": ("cancelled", "WorkflowCancelledError"),
        "dk-terminate": ("cancelled", "WorkflowTerminatedError"),
        "dk-abandon": ("suspended", None),
    }
    assert undone == ["cancel"]  # the children's own undo runs as their parent_close says
    assert not WorkflowInstance.objects.filter(pk="dp").exists()
