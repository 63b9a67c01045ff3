"""Breakpoints: ctx.breakpoint() waits, visible as pending, until resume() continues it; a
resume that finds no such breakpoint raises and stores nothing."""

from __future__ import annotations

import pytest
from django.db import transaction

import django_workflows as wf
from django_workflows.models import Signal
from tests.core.helpers import journal

pytestmark = pytest.mark.django_db


@pytest.fixture
def approved(define):
    @define("approved")
    def approved(ctx, input):
        ctx.step("prepare", lambda step: "prepared")
        ctx.breakpoint("approve")
        return ctx.step("pay", lambda step: "paid")

    return approved


def test_a_breakpoint_waits_pending_until_resumed(workflow_clock, approved, events):
    wf.start("approved", id="b1")
    wf.drain()
    status = wf.get_status("b1")
    assert status.status == "suspended"
    assert ("approve", "breakpoint", "pending") in journal("b1")
    assert wf.drain() == 0  # nothing else continues it
    assert wf.resume("b1") == "approve"
    wf.drain()
    status = wf.get_status("b1")
    assert status.status == "completed", status.error
    assert status.output == "paid"
    assert ("approve", "breakpoint", "completed") in journal("b1")
    resumed = [e for e in events if e.type == "breakpoint-resumed"]
    assert [(e.id, e.data) for e in resumed] == [("b1", {"breakpoint": "approve"})]


def test_resume_by_name(workflow_clock, approved):
    wf.start("approved", id="b2")
    wf.drain()
    with pytest.raises(wf.WorkflowStateError, match="not at breakpoint 'other'"):
        wf.resume("b2", "other")
    assert wf.resume("b2", "approve") == "approve"
    wf.drain()
    assert wf.get_status("b2").output == "paid"


def test_a_resume_before_the_breakpoint_is_refused_and_not_kept(workflow_clock, approved):
    wf.start("approved", id="early")
    with pytest.raises(wf.WorkflowStateError, match="not waiting at a breakpoint"):
        wf.resume("early")
    assert not Signal.objects.exists()
    wf.drain()
    assert wf.get_status("early").status == "suspended"  # the refused resume was not kept


def test_a_second_resume_is_refused_and_stored_once(workflow_clock, approved):
    wf.start("approved", id="twice")
    wf.drain()
    wf.resume("twice")
    with pytest.raises(wf.WorkflowStateError, match="resumed at breakpoint 'approve' already"):
        wf.resume("twice")
    assert Signal.objects.count() == 1
    wf.drain()
    with pytest.raises(wf.WorkflowStateError, match="is completed"):
        wf.resume("twice")
    assert Signal.objects.count() == 1


def test_resume_of_an_unknown_instance(workflow_clock):
    with pytest.raises(wf.WorkflowNotFoundError):
        wf.resume("nobody")


def test_bad_arguments_are_refused_before_anything_is_stored(workflow_clock):
    with pytest.raises(TypeError, match="id"):
        wf.resume(42)
    with pytest.raises(TypeError, match="name"):
        wf.resume("x", 7)
    with pytest.raises(ValueError, match="name"):
        wf.resume("x", "")
    with pytest.raises(ValueError, match="id"):
        wf.resume("x" * 300)


def test_a_refused_resume_leaves_the_callers_transaction_usable(workflow_clock, approved):
    wf.start("approved", id="tx")
    with transaction.atomic():
        with pytest.raises(wf.WorkflowStateError):
            wf.resume("tx")
        wf.signal("unrelated")  # the transaction still works
    assert Signal.objects.filter(name="unrelated").count() == 1


def test_resume_joins_the_callers_transaction(workflow_clock, approved):
    wf.start("approved", id="rolled")
    wf.drain()
    with pytest.raises(RuntimeError), transaction.atomic():
        wf.resume("rolled")
        raise RuntimeError("rolled back")
    assert not Signal.objects.exists()
    wf.drain()
    assert wf.get_status("rolled").status == "suspended"
    wf.resume("rolled")  # still at the breakpoint: the rolled-back resume counts for nothing
    wf.drain()
    assert wf.get_status("rolled").status == "completed"


def test_several_breakpoints_need_a_name(workflow_clock, define):
    @define("two-gates")
    def two_gates(ctx, input):
        ctx.gather(lambda: ctx.breakpoint("legal"), lambda: ctx.breakpoint("finance"))
        return "through"

    wf.start("two-gates", id="gates")
    wf.drain()
    with pytest.raises(wf.WorkflowStateError, match="several breakpoints"):
        wf.resume("gates")
    wf.resume("gates", "finance")
    wf.drain()
    assert wf.get_status("gates").status == "suspended"
    assert wf.resume("gates") == "legal"  # now its only one
    wf.drain()
    assert wf.get_status("gates").output == "through"


def test_the_same_breakpoint_name_reached_again_needs_a_new_resume(workflow_clock, define):
    @define("looping")
    def looping(ctx, input):
        for n in range(2):
            ctx.breakpoint(f"round-{n}")
        return "done"

    wf.start("looping", id="loop")
    wf.drain()
    wf.resume("loop")
    wf.drain()
    assert wf.get_status("loop").status == "suspended"
    assert wf.resume("loop") == "round-1"
    wf.drain()
    assert wf.get_status("loop").output == "done"


def test_a_cancel_stops_an_instance_at_a_breakpoint(workflow_clock, approved):
    wf.start("approved", id="stop")
    wf.drain()
    wf.cancel("stop")
    wf.drain()
    assert wf.get_status("stop").status == "cancelled"
    with pytest.raises(wf.WorkflowStateError, match="cancelled"):
        wf.resume("stop")


def test_a_bad_breakpoint_name_fails_the_definition(workflow_clock, define):
    @define("nameless")
    def nameless(ctx, input):
        ctx.breakpoint("")

    wf.start("nameless", id="nameless")
    wf.drain()
    status = wf.get_status("nameless")
    assert status.status == "failed"
    assert "breakpoint needs a non-empty name" in status.error["message"]


def test_a_breakpoint_reached_again_after_continue_as_new_in_the_same_tick(workflow_clock, define):
    @define("looping")
    def looping(ctx, input):
        ctx.breakpoint("approve")
        if input is None:
            ctx.continue_as_new("again")
        return ctx.generation

    wf.start("looping", id="g1")
    wf.drain()
    assert wf.resume("g1") == "approve"
    wf.drain()
    assert wf.get_status("g1").generation == 1
    assert wf.get_status("g1").status == "suspended"
    assert wf.resume("g1") == "approve"  # the clock has not moved
    wf.drain()
    assert wf.get_status("g1").output == 1
