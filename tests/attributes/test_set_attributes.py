"""ctx.set_attributes(): written at once with its journal entry, replayed without writing
again, None removes one, the limit counts what the instance has, the attributes-set event; and
tags and attributes go with the instance when it is deleted or purged."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import django_workflows as wf
from django_workflows.models import InstanceAttribute, InstanceTag, JournalEntry

pytestmark = pytest.mark.django_db(transaction=True)

PLACED = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)


@pytest.fixture
def progressing(define, world):
    @define("sets-attributes", tags=["ops"])
    def run(ctx, input):
        ctx.set_attributes(stage="reserving", placed=PLACED)
        ctx.step("reserve", lambda step: world.calls.append("reserve") or "r1")
        ctx.set_attributes(stage="waiting", amount=input["amount"], tier=None)
        ctx.wait_for_signal("go", "go", key=ctx.instance_id)
        ctx.set_attributes(stage="done", placed=None)
        return "ok"

    return run


def test_attributes_set_by_the_run_are_searchable_at_once(progressing):
    wf.start("sets-attributes", {"amount": 30}, id="s1", attributes={"tier": "pro"})
    wf.drain()
    status = wf.get_status("s1")
    assert status.status == "suspended", status.error
    assert status.attributes == {"stage": "waiting", "placed": PLACED, "amount": 30}  # tier removed
    assert [s.id for s in wf.list_instances(attributes={"stage": "waiting"})] == ["s1"]
    wf.signal("go", key="s1")
    wf.drain()
    assert wf.get_status("s1").attributes == {"stage": "done", "amount": 30}
    assert wf.get_status("s1").tags == ["ops"]


def test_each_call_is_one_journal_entry_with_the_names_it_set(progressing):
    wf.start("sets-attributes", {"amount": 30}, id="s2")
    wf.drain()
    entries = {
        name: doc
        for name, doc in JournalEntry.objects.filter(
            instance_id="s2", name__startswith="$attributes:"
        ).values_list("name", "document")
    }
    assert len(entries) == 2
    names = sorted(doc["names"] for doc in entries.values())
    assert names == [["amount", "stage", "tier"], ["placed", "stage"]]


def test_a_second_execution_replays_the_calls_without_writing_them_again(progressing, events):
    wf.start("sets-attributes", {"amount": 30}, id="s3")
    wf.drain()
    # Changed behind the run's back: a replayed call that wrote again would put it back.
    InstanceAttribute.objects.filter(instance_id="s3", name="amount").update(number=99)
    wf.signal("go", key="s3")
    wf.drain()
    assert wf.get_status("s3").status == "completed"
    assert wf.get_status("s3").attributes == {"stage": "done", "amount": 99}
    sets = [e.data["attributes"] for e in events if e.type == "attributes-set"]
    assert sets == [
        {"stage": "reserving", "placed": PLACED.isoformat()},
        {"stage": "waiting", "amount": 30, "tier": None},
        {"stage": "done", "placed": None},
    ]


def test_a_changed_call_on_replay_is_a_nondeterminism_error(define):
    names = ["a"]

    @define("changes-attributes")
    def run(ctx, input):
        ctx.set_attributes(**{name: 1 for name in names})
        ctx.wait_for_signal("go", "go", key=ctx.instance_id)

    wf.start("changes-attributes", id="nd")
    wf.drain()
    names[:] = ["b"]
    wf.signal("go", key="nd")
    wf.drain()
    status = wf.get_status("nd")
    assert status.status == "failed"
    assert "attributes set here were ['a'] and are now ['b']" in status.error["message"]


def test_more_than_fifty_in_all_is_refused_and_nothing_is_written(define):
    @define("too-many-attributes")
    def run(ctx, input):
        ctx.set_attributes(**{f"a{n}": n for n in range(30)})
        try:
            ctx.set_attributes(**{f"b{n}": n for n in range(21)})
        except ValueError as error:
            ctx.set_value("refused", str(error))
        ctx.set_attributes(a0=None, b0=0)  # one out, one in: still 30
        return "ok"

    wf.start("too-many-attributes", id="many", attributes={"start": 1})
    wf.drain()
    status = wf.get_status("many")
    assert status.status == "completed", status.error
    assert "52 search attributes" in status.values["refused"]
    assert len(status.attributes) == 31
    assert "a0" not in status.attributes and status.attributes["b0"] == 0


def test_bad_values_in_set_attributes_fail_the_call_with_a_clear_error(define):
    @define("bad-set-attributes")
    def run(ctx, input):
        errors = []
        for bad in ({"when": datetime(2026, 1, 1)}, {"items": [1]}, {"x__y": 1}, {"n": 2**60}):
            try:
                ctx.set_attributes(**bad)
            except (TypeError, ValueError) as error:
                errors.append(type(error).__name__)
        return errors

    wf.start("bad-set-attributes", id="bad")
    wf.drain()
    status = wf.get_status("bad")
    assert status.output == ["ValueError", "TypeError", "ValueError", "ValueError"], status.error
    assert not InstanceAttribute.objects.filter(instance_id="bad").exists()


def test_delete_and_purge_remove_the_rows(define, workflow_clock):
    @define("deleted-with-tags", tags=["static"])
    def run(ctx, input):
        ctx.set_attributes(done=True)
        return 1

    for id in ("d1", "d2", "d3"):
        wf.start("deleted-with-tags", id=id, tags=["x"], attributes={"n": 1})
    wf.drain()
    assert wf.delete("d1") is True
    assert not InstanceTag.objects.filter(instance_id="d1").exists()
    assert not InstanceAttribute.objects.filter(instance_id="d1").exists()
    workflow_clock.advance("2d")
    assert wf.purge(older_than="1d").instances == 2
    assert not InstanceTag.objects.exists()
    assert not InstanceAttribute.objects.exists()


def test_a_fork_starts_with_the_originals_tags_and_attributes(progressing):
    wf.start("sets-attributes", {"amount": 30}, id="orig", tags=["x"], attributes={"tier": "pro"})
    wf.drain()
    forked = wf.fork("orig", from_step="reserve", new_id="forked")
    assert forked.created
    status = wf.get_status("forked")
    assert status.tags == ["ops", "x"]
    assert status.attributes == {"stage": "waiting", "placed": PLACED, "amount": 30}
    wf.drain()  # reruns from the step: its own calls write again
    assert wf.get_status("forked").status == "suspended"
    assert wf.get_status("forked").attributes["stage"] == "waiting"
    assert [s.id for s in wf.list_instances(tag="x")] == ["orig", "forked"]


def test_attributes_stay_when_the_instance_continues_as_new(define):
    @define("continues-with-attributes", tags=["loop"])
    def run(ctx, input):
        ctx.set_attributes(round=input)
        if input < 2:
            ctx.continue_as_new(input + 1)
        return input

    wf.start("continues-with-attributes", 0, id="again", attributes={"first": True})
    for _ in range(4):
        wf.drain()
    status = wf.get_status("again")
    assert status.status == "completed" and status.generation == 2
    assert status.attributes == {"first": True, "round": 2}
    assert status.tags == ["loop"]


def test_set_attributes_inside_a_step_is_refused(define):
    @define("sets-from-a-step")
    def run(ctx, input):
        ctx.step("inside", lambda step: ctx.set_attributes(stage=1))

    wf.start("sets-from-a-step", id="inside")
    wf.drain()
    status = wf.get_status("inside")
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowDefinitionError"
    assert "ctx.set_attributes()" in status.error["message"]
    assert status.attributes == {}
