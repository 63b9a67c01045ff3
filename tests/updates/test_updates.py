"""Updates: validated by the instance's workflow version, durable, addressed by instance id,
kept when sent before the wait, taken one per wait in the order they were stored."""

from __future__ import annotations

import logging

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction

import django_workflows as wf
from django_workflows.models import Signal

pytestmark = pytest.mark.django_db

ADDRESS = {"street": "1 Rue de la Paix", "postcode": "75002"}


def test_an_update_sent_before_the_wait_is_kept_for_it(fulfil_order, workflow_clock):
    wf.start(fulfil_order, {}, id="early")
    sent = wf.update("early", "change-address", ADDRESS)
    assert sent == wf.UpdateResult(True, None, sent.instance)
    assert sent.instance.id == "early" and sent.instance.status == "pending"
    assert wf.drain() == 1
    status = wf.get_status("early")
    assert status.status == "completed", status.error
    assert status.output == {"address": ADDRESS, "notes": []}


def test_an_update_wakes_the_instance_waiting_for_it(fulfil_order, workflow_clock):
    wf.start(fulfil_order, {}, id="waiting")
    wf.drain()
    status = wf.get_status("waiting")
    assert status.status == "suspended"
    assert [(w.signal, w.key) for w in status.waits] == [("$update:change-address", "waiting")]
    assert wf.drain() == 0
    sent = wf.update("waiting", "change-address", ADDRESS)
    assert sent.accepted and sent.instance.wake_at is not None  # made due
    assert wf.drain() == 1
    assert wf.get_status("waiting").output["address"] == ADDRESS


def test_a_refused_update_leaves_the_instance_waiting_and_stores_nothing(
    fulfil_order, workflow_clock
):
    wf.start(fulfil_order, {}, id="refused")
    wf.drain()
    refused = wf.update("refused", "change-address", {"street": "nowhere"})
    assert refused.accepted is False
    assert refused.reason == "An address needs a postcode."
    assert refused.instance.id == "refused" and refused.instance.status == "suspended"
    assert not Signal.objects.exists()
    assert wf.drain() == 0
    assert wf.get_status("refused").status == "suspended"
    assert wf.update("refused", "change-address", ADDRESS).accepted  # a good one still goes
    wf.drain()
    assert wf.get_status("refused").output["address"] == ADDRESS


def test_a_reason_the_validator_returns_refuses_the_update(fulfil_order, workflow_clock):
    wf.start(fulfil_order, {"shipped": True}, id="shipped")
    refused = wf.update("shipped", "change-address", ADDRESS)
    assert (refused.accepted, refused.reason) == (False, "The order has shipped.")
    assert not Signal.objects.exists()


def test_the_validator_gets_the_instance_status_and_the_argument(define, workflow_clock):
    seen = []

    @define("validated")
    def validated(ctx, input):
        return ctx.wait_for_update("go")

    @validated.validator("go")
    def record(status, arg):
        seen.append((status, arg))
        arg["changed"] = True  # the validator's copy: what is stored is what was sent

    wf.start(validated, {"order": 7}, id="seen")
    wf.drain()
    assert wf.update("seen", "go", {"n": 1}).accepted
    [(status, arg)] = seen
    assert isinstance(status, wf.InstanceStatus)
    assert (status.id, status.input, status.status) == ("seen", {"order": 7}, "suspended")
    assert arg == {"n": 1, "changed": True}
    wf.drain()
    assert wf.get_status("seen").output == {"n": 1}


def test_a_validator_that_raises_another_error_refuses_with_its_message_and_logs_it(
    define, workflow_clock, caplog
):
    @define("buggy")
    def buggy(ctx, input):
        return ctx.wait_for_update("go")

    @buggy.validator("go")
    def broken(status, arg):
        raise KeyError("customer")

    wf.start(buggy, None, id="buggy")
    with caplog.at_level(logging.ERROR, logger="django_workflows"):
        refused = wf.update("buggy", "go", 1)
    assert (refused.accepted, refused.reason) == (False, "'customer'")
    assert not Signal.objects.exists()
    [record] = [r for r in caplog.records if "validator" in r.getMessage()]
    assert "'go'" in record.getMessage() and record.exc_info[0] is KeyError


def test_a_validator_returning_something_else_refuses_and_logs(define, workflow_clock, caplog):
    @define("odd-validator")
    def odd(ctx, input):
        return ctx.wait_for_update("go")

    @odd.validator("go")
    def says_true(status, arg):
        return True

    wf.start(odd, None, id="odd")
    with caplog.at_level(logging.ERROR, logger="django_workflows"):
        refused = wf.update("odd", "go", 1)
    assert refused.accepted is False and "returned True" in refused.reason
    assert any("returned True" in r.getMessage() for r in caplog.records)
    assert not Signal.objects.exists()


def test_a_validation_error_with_several_messages_gives_them_all(define, workflow_clock):
    @define("many-messages")
    def many(ctx, input):
        return ctx.wait_for_update("go")

    @many.validator("go")
    def two(status, arg):
        raise ValidationError(["No street.", "No postcode."])

    wf.start(many, None, id="many")
    assert wf.update("many", "go", {}).reason == "No street.; No postcode."


def test_an_update_without_a_validator_is_accepted(define, workflow_clock):
    @define("unvalidated")
    def unvalidated(ctx, input):
        return ctx.wait_for_update("anything")

    wf.start(unvalidated, None, id="free")
    assert wf.update("free", "anything", [1, 2]).accepted
    wf.drain()
    assert wf.get_status("free").output == [1, 2]


def test_an_update_to_a_finished_instance_is_refused(fulfil_order, workflow_clock):
    wf.start(fulfil_order, {}, id="done")
    wf.update("done", "change-address", ADDRESS)
    wf.drain()
    assert wf.get_status("done").status == "completed"
    stored = Signal.objects.count()
    refused = wf.update("done", "change-address", ADDRESS)
    assert refused.accepted is False
    assert "has ended (completed)" in refused.reason
    assert refused.instance.status == "completed"
    assert Signal.objects.count() == stored


def test_an_update_to_a_cancelled_instance_is_refused(fulfil_order, workflow_clock):
    wf.start(fulfil_order, {}, id="gone")
    wf.drain()
    wf.cancel("gone")
    wf.drain()
    assert wf.get_status("gone").status == "cancelled"
    refused = wf.update("gone", "change-address", ADDRESS)
    assert refused.accepted is False and "cancelled" in refused.reason
    assert not Signal.objects.exists()


def test_an_update_to_an_instance_asked_to_cancel_is_refused(fulfil_order, workflow_clock):
    wf.start(fulfil_order, {}, id="stopping")
    wf.drain()
    wf.cancel("stopping")  # it stops at its next ctx call: no wait would take the update
    refused = wf.update("stopping", "change-address", ADDRESS)
    assert refused.accepted is False and "asked to cancel" in refused.reason
    assert not Signal.objects.exists()


def test_an_update_to_a_compensating_instance_is_refused(define, workflow_clock):
    @define("undoes-slowly")
    def undoes(ctx, input):
        ctx.step("book", lambda step: 1, compensate=lambda result, step: undo(step))
        ctx.fail("Give up.")

    def undo(step):
        if step.attempt == 1:
            raise RuntimeError("the undo fails once")

    wf.start(undoes, None, id="undoing")
    wf.drain()
    assert wf.get_status("undoing").status == "compensating"
    refused = wf.update("undoing", "anything", 1)
    assert refused.accepted is False and "is compensating" in refused.reason
    assert not Signal.objects.exists()


def test_an_update_to_an_unknown_instance_raises_not_found(fulfil_order, workflow_clock):
    with pytest.raises(wf.WorkflowNotFoundError, match="nobody"):
        wf.update("nobody", "change-address", ADDRESS)
    assert not Signal.objects.exists()


def test_updates_are_addressed_by_instance_id(fulfil_order, workflow_clock):
    wf.start(fulfil_order, {}, id="a")
    wf.start(fulfil_order, {}, id="b")
    wf.drain()
    wf.update("a", "change-address", ADDRESS)
    assert wf.drain() == 1
    assert wf.get_status("a").status == "completed"
    assert wf.get_status("b").status == "suspended"


def test_updates_are_taken_one_per_wait_in_the_order_they_were_stored(fulfil_order, workflow_clock):
    wf.start(fulfil_order, {"notes": 3}, id="notes")
    for note in ("one", "two"):  # before the waits
        assert wf.update("notes", "add-note", note).accepted
    wf.update("notes", "change-address", ADDRESS)
    wf.drain()
    assert wf.get_status("notes").status == "suspended"  # the third note is still to come
    wf.update("notes", "add-note", "three")
    wf.update("notes", "add-note", "four")  # kept: no wait takes it
    wf.drain()
    status = wf.get_status("notes", journal=True)
    assert status.output == {"address": ADDRESS, "notes": ["one", "two", "three"]}
    names = [e.name for e in status.journal if e.name.startswith("$update:")]
    assert names == [
        "$update:change-address#1",
        "$update:add-note#1",
        "$update:add-note#2",
        "$update:add-note#3",
    ]


def test_inside_atomic_an_update_commits_or_rolls_back_with_the_caller(
    fulfil_order, workflow_clock
):
    wf.start(fulfil_order, {}, id="atomic")
    wf.drain()
    with pytest.raises(RuntimeError), transaction.atomic():
        assert wf.update("atomic", "change-address", ADDRESS).accepted
        raise RuntimeError("the business write failed")
    assert not Signal.objects.exists()
    assert wf.drain() == 0
    with transaction.atomic():
        wf.update("atomic", "change-address", ADDRESS)
    wf.drain()
    assert wf.get_status("atomic").output["address"] == ADDRESS


def test_past_its_timeout_the_wait_returns_none_and_a_late_update_is_kept(define, workflow_clock):
    @define("timed-update")
    def timed(ctx, input):
        first = ctx.wait_for_update("go", timeout="1h")
        second = ctx.wait_for_update("go")
        return [first, second]

    wf.start(timed, None, id="timed")
    wf.drain()
    workflow_clock.advance("1h")
    wf.drain()
    assert wf.get_status("timed").status == "suspended"
    wf.update("timed", "go", "late")
    wf.drain()
    assert wf.get_status("timed").output == [None, "late"]


def test_update_wait_is_a_condition_of_wait_for_any(define, workflow_clock):
    @define("update-or-timer")
    def either(ctx, input):
        won = ctx.wait_for_any("first", update=ctx.update_wait("go"), late=ctx.timer("1d"))
        return [won.key, won.value]

    wf.start(either, None, id="either-update")
    wf.start(either, None, id="either-timer")
    wf.drain()
    wf.update("either-update", "go", None)  # None, told apart from the timer by the key
    wf.drain()
    assert wf.get_status("either-update").output == ["update", None]
    workflow_clock.advance("1d")
    wf.drain()
    assert wf.get_status("either-timer").output == ["late", None]


def test_the_validator_of_the_instance_s_version_decides(define, workflow_clock):
    @define("versioned-update", version=1)
    def v1(ctx, input):
        return ctx.wait_for_update("discount")

    @v1.validator("discount")
    def at_most_ten(status, arg):
        return None if arg <= 10 else "Version 1 gives at most 10 %."

    @define("versioned-update", version=2)
    def v2(ctx, input):
        return ctx.wait_for_update("discount")

    @v2.validator("discount")
    def at_most_twenty(status, arg):
        return None if arg <= 20 else "Version 2 gives at most 20 %."

    wf.start("versioned-update", None, id="old", version=1)
    wf.start("versioned-update", None, id="new")
    assert wf.update("old", "discount", 15).reason == "Version 1 gives at most 10 %."
    assert wf.update("new", "discount", 15).accepted


def test_an_update_sent_from_a_step_is_stored_once_however_often_the_step_runs(
    fulfil_order, define, workflow_clock
):
    @define("sends-an-update")
    def sender(ctx, input):
        def send(step):
            wf.update("receiver", "change-address", ADDRESS)
            if step.attempt == 1:
                raise RuntimeError("lost the reply")

        ctx.step("send", send, retry=wf.Retry(attempts=2, delay="1s"))

    wf.start(fulfil_order, {}, id="receiver")
    wf.start(sender, None, id="sender")
    wf.drain()
    workflow_clock.advance("1s")
    wf.drain()
    assert wf.get_status("sender").status == "completed"
    assert Signal.objects.filter(name="$update:change-address").count() == 1


def test_users_cannot_send_the_engine_s_update_signal_past_the_validator(
    fulfil_order, workflow_clock
):
    wf.start(fulfil_order, {}, id="bypass")
    with pytest.raises(ValueError, match=r"'\$'"):
        wf.signal("$update:change-address", {"street": "x"}, key="bypass")
    assert not Signal.objects.exists()


def test_accepted_and_rejected_updates_send_events(
    fulfil_order, workflow_clock, events, django_capture_on_commit_callbacks
):
    wf.start(fulfil_order, {}, id="evented")
    refused = wf.update("evented", "change-address", {})
    with django_capture_on_commit_callbacks(execute=True):  # accepted: sent once it commits
        accepted = wf.update("evented", "change-address", ADDRESS)
        assert not [e for e in events if e.type == "update-accepted"]
    assert accepted.accepted and not refused.accepted
    updates = [e for e in events if e.type.startswith("update-")]
    assert [(e.type, e.id, e.workflow, e.version) for e in updates] == [
        ("update-rejected", "evented", "fulfil-order-updates", 1),
        ("update-accepted", "evented", "fulfil-order-updates", 1),
    ]
    assert updates[0].data == {"update": "change-address", "reason": "An address needs a postcode."}
    signal_id = Signal.objects.get().id
    assert updates[1].data == {"update": "change-address", "signal_id": signal_id}


def test_gather_branches_waiting_for_one_update_name_each_take_their_own(define, workflow_clock):
    @define("branches-take-updates")
    def branches(ctx, input):
        return ctx.gather(
            lambda: ctx.wait_for_update("seat"),
            lambda: ctx.wait_for_update("seat"),
        )

    wf.start(branches, None, id="branches")
    wf.drain()
    wf.update("branches", "seat", "12A")
    wf.update("branches", "seat", "12B")
    for _ in range(3):
        wf.drain()
    status = wf.get_status("branches", journal=True)
    assert status.status == "completed", status.error
    assert sorted(status.output) == ["12A", "12B"]
    names = sorted(e.name for e in status.journal if e.name.startswith("$update:"))
    assert names == ["$update:seat#0.0.1", "$update:seat#0.1.1"]


def test_an_update_after_its_wait_timed_out_is_refused_and_stores_nothing(
    fulfil_order, workflow_clock, events
):
    wf.start(fulfil_order, {"timeout": "1h"}, id="late")
    wf.drain()
    workflow_clock.advance("2h")  # the deadline passed before any worker ran the instance
    result = wf.update("late", "change-address", ADDRESS)
    assert result.accepted is False
    assert "timed out" in result.reason and "change-address" in result.reason
    assert not Signal.objects.exists()
    assert [e.type for e in events if e.type.startswith("update-")] == ["update-rejected"]
    wf.drain()
    assert wf.get_status("late").output == {"address": None, "notes": []}


def test_an_update_just_before_its_wait_s_deadline_wins_however_late_the_worker(
    fulfil_order, workflow_clock
):
    wf.start(fulfil_order, {"timeout": "1h"}, id="in-time")
    wf.drain()
    workflow_clock.advance("59m")
    assert wf.update("in-time", "change-address", ADDRESS).accepted
    workflow_clock.advance("5h")
    wf.drain()
    assert wf.get_status("in-time").output == {"address": ADDRESS, "notes": []}
