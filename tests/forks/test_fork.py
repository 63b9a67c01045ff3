"""fork(): a new instance that starts from the original's journal before a step, reruns that
step and what follows with the code deployed now, and is linked to the original."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction

import django_workflows as wf
from django_workflows.models import JournalEntry, WorkflowInstance
from tests.helpers import wait_until, worker_thread

pytestmark = pytest.mark.django_db


def steps_of(id: str) -> list[tuple[str, str]]:
    journal = wf.get_status(id, journal=True).journal
    return [(e.name, e.status) for e in journal if e.kind == "step"]


def test_a_fork_from_the_failed_step_reruns_only_that_step_with_the_fixed_code(failed_order, runs):
    assert (runs["charge"], runs["pack"], runs["ship"]) == (1, 1, 1)
    forked = wf.fork(failed_order, from_step="ship")
    assert forked.created and forked.status == "pending"
    assert (forked.workflow, forked.version) == ("shipping", 1)
    wf.drain()
    status = wf.get_status(forked.id)
    assert status.status == "completed"
    assert status.output == {
        "charged": 2499,
        "parcel": "parcel-o-1",
        "tracking": "track-o-1",
        "order": "o-1",
    }
    assert (runs["charge"], runs["pack"], runs["ship"]) == (1, 1, 2)
    assert WorkflowInstance.objects.get(pk=forked.id).forked_from == failed_order
    assert wf.get_status(forked.id).forked_from == failed_order
    assert wf.list_instances(workflow="shipping", status="completed")[0].forked_from == failed_order
    assert wf.get_status(failed_order).forked_from is None
    assert wf.get_status(failed_order).status == "failed"  # the original stays as it was


def test_a_fork_from_the_first_step_reruns_everything(failed_order, runs):
    forked = wf.fork(failed_order, from_step="charge")
    wf.drain()
    assert wf.get_status(forked.id).status == "completed"
    assert (runs["charge"], runs["pack"], runs["ship"]) == (2, 2, 2)


def test_the_fork_starts_with_the_entries_before_the_step(failed_order):
    forked = wf.fork(failed_order, from_step="pack")
    names = list(
        JournalEntry.objects.filter(instance_id=forked.id)
        .order_by("id")
        .values_list("name", flat=True)
    )
    assert names == ["charge", "$fork"]
    wf.drain()
    assert steps_of(forked.id) == [
        ("charge", "completed"),
        ("pack", "completed"),
        ("ship", "completed"),
    ]


def test_the_forks_journal_reads_as_the_originals_up_to_the_step(failed_order):
    forked = wf.fork(failed_order, from_step="pack")
    original = wf.get_status(failed_order, journal=True).journal
    shown = wf.get_status(forked.id, journal=True).journal
    assert [e.name for e in shown] == ["charge"]  # not the engine's $fork marker
    assert shown[0] == original[0]
    wf.drain()
    shown = wf.get_status(forked.id, journal=True).journal
    assert [(e.name, e.kind) for e in shown] == [(e.name, e.kind) for e in original]
    assert "$fork" in JournalEntry.objects.filter(instance_id=forked.id).values_list(
        "name", flat=True
    )


def test_a_fork_runs_on_a_worker_in_another_thread(shipping, runs, transactional_db):
    shipping(broken=True)
    wf.start("shipping", {"order": "o-2", "total": 10}, id="order-2")
    with worker_thread(poll_interval="100ms"):
        assert wait_until(lambda: wf.get_status("order-2").status == "failed", 20)
        shipping(broken=False)
        forked = wf.fork("order-2", from_step="ship", new_id="order-2-rerun")
        assert wait_until(lambda: wf.get_status("order-2-rerun").status == "completed", 20)
    assert forked.id == "order-2-rerun"
    assert (runs["charge"], runs["pack"], runs["ship"]) == (1, 1, 2)


def test_a_forked_step_keeps_the_original_idempotency_key(failed_order, runs):
    forked = wf.fork(failed_order, from_step="charge")
    wf.drain()
    again = wf.fork(forked.id, from_step="charge")  # a fork of the fork: the same line
    wf.drain()
    assert runs["charge"] == 3
    assert runs["charge-key:order-1:charge"] == 3
    assert wf.get_status(again.id).status == "completed"


def test_a_fork_takes_another_input(failed_order, runs):
    forked = wf.fork(failed_order, from_step="pack", input={"order": "o-9", "total": 1})
    wf.drain()
    status = wf.get_status(forked.id)
    assert status.input == {"order": "o-9", "total": 1}
    # charge was copied from the original (its result, 2499); pack and ship ran with the new input
    assert status.output == {
        "charged": 2499,
        "parcel": "parcel-o-9",
        "tracking": "track-o-9",
        "order": "o-9",
    }


def test_a_fork_with_a_new_id_is_returned_again_for_the_same_call(failed_order):
    first = wf.fork(failed_order, from_step="ship", new_id="order-1-again")
    again = wf.fork(failed_order, from_step="ship", new_id="order-1-again")
    assert first.id == again.id == "order-1-again"
    assert (first.created, again.created) == (True, False)
    assert JournalEntry.objects.filter(instance_id="order-1-again").count() == 3
    with pytest.raises(
        wf.WorkflowIdConflictError, match="is not the fork of 'order-1' from step 'pack'"
    ):
        wf.fork(failed_order, from_step="pack", new_id="order-1-again")
    with pytest.raises(wf.WorkflowIdConflictError):
        wf.fork(failed_order, from_step="ship", new_id="order-1-again", input={"order": "x"})
    with pytest.raises(wf.WorkflowIdConflictError):
        wf.fork(failed_order, from_step="ship", new_id=failed_order)


def test_a_fork_without_a_new_id_gets_a_fresh_one(failed_order):
    first = wf.fork(failed_order, from_step="ship")
    second = wf.fork(failed_order, from_step="ship")
    assert first.id != second.id and first.created and second.created


def test_an_unknown_instance_is_refused(failed_order):
    with pytest.raises(wf.WorkflowNotFoundError, match="No workflow instance has the id 'nope'"):
        wf.fork("nope", from_step="ship")
    assert WorkflowInstance.objects.count() == 1


def test_an_unknown_step_is_refused_naming_the_journal_steps(failed_order):
    with pytest.raises(ValueError) as raised:
        wf.fork(failed_order, from_step="deliver")
    assert str(raised.value) == (
        "from_step 'deliver' is not a step in the journal of instance 'order-1'; its steps, in "
        'journal order: "charge", "pack", "ship".'
    )
    with pytest.raises(TypeError, match="from_step must be a step name"):
        wf.fork(failed_order, from_step=None)
    assert WorkflowInstance.objects.count() == 1


def test_an_input_that_is_not_json_is_refused_first(failed_order):
    with pytest.raises(TypeError, match="The input of the fork of 'nope'"):
        wf.fork("nope", from_step="deliver", input={"when": object()})
    assert WorkflowInstance.objects.count() == 1


def test_a_fork_of_a_version_whose_code_is_gone_is_refused(failed_order, define):
    WorkflowInstance.objects.filter(pk=failed_order).update(version=7)
    with pytest.raises(wf.WorkflowNotFoundError, match="version 7, which is not registered"):
        wf.fork(failed_order, from_step="ship")
    assert WorkflowInstance.objects.count() == 1


def test_a_fork_inside_an_atomic_block_rolls_back_with_it(failed_order):
    with pytest.raises(RuntimeError), transaction.atomic():
        forked = wf.fork(failed_order, from_step="ship")
        assert WorkflowInstance.objects.filter(pk=forked.id).exists()
        raise RuntimeError("the business rows failed")
    assert WorkflowInstance.objects.filter(forked_from=failed_order).count() == 0
    assert JournalEntry.objects.filter(instance__forked_from=failed_order).count() == 0


def test_a_fork_after_a_compensated_step_is_refused(define, workflow_clock):
    @define("refunded")
    def refunded(ctx, input):
        ctx.step("charge", lambda step: 1, compensate=lambda result, step: None)
        ctx.step("ship", lambda step: 1 / 0, retry=wf.Retry(attempts=1))

    wf.start("refunded", None, id="refunded-1")
    wf.drain()
    assert wf.get_status("refunded-1").status == "failed"
    with pytest.raises(wf.WorkflowStateError, match="compensated the step 'charge'"):
        wf.fork("refunded-1", from_step="ship")
    forked = wf.fork("refunded-1", from_step="charge")  # from the undone step: all runs again
    assert forked.created


def test_the_fork_is_announced_when_it_commits(
    failed_order, events, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        forked = wf.fork(failed_order, from_step="ship")
        assert not [e for e in events if e.type == "workflow-forked"]
    [event] = [e for e in events if e.type == "workflow-forked"]
    assert (event.id, event.workflow, event.version) == (forked.id, "shipping", 1)
    assert event.data == {"forked_from": "order-1", "from_step": "ship", "copied": 2}


def test_a_fork_keeps_the_priority_and_gets_a_run_timeout_from_now(define, workflow_clock):
    @define("timed-fork", timeout="1h")
    def timed(ctx, input):
        ctx.step("one", lambda step: 1)
        ctx.step("two", lambda step: 1 / 0, retry=wf.Retry(attempts=1))

    wf.start("timed-fork", None, id="timed-1", priority=3)
    wf.drain()
    workflow_clock.advance("10m")
    forked = wf.fork("timed-1", from_step="two")
    status = wf.get_status(forked.id)
    assert status.priority == 3 and status.parent_id is None
    assert status.deadline == workflow_clock.now() + timedelta(hours=1)


def test_a_wait_before_the_step_replays_its_signal(define, workflow_clock, runs):
    @define("approved")
    def approved(ctx, input):
        decision = ctx.wait_for_signal("approval", "approve", key=input)

        def act(step):
            runs["act"] += 1
            if runs["act"] == 1:
                raise RuntimeError("bug")
            return decision

        return ctx.step("act", act, retry=wf.Retry(attempts=1))

    wf.start("approved", "a-1", id="approved-1")
    wf.drain()
    wf.signal("approve", {"by": "ana"}, key="a-1")
    wf.drain()
    assert wf.get_status("approved-1").status == "failed"
    forked = wf.fork("approved-1", from_step="act")
    wf.drain()  # no new signal needed: the wait's journaled signal is replayed
    assert wf.get_status(forked.id).output == {"by": "ana"}


def test_a_wait_after_the_step_waits_for_a_new_signal(define, workflow_clock):
    @define("approved-after")
    def approved_after(ctx, input):
        ctx.step("prepare", lambda step: 1)
        return ctx.wait_for_signal("approval", "approve", key=input)

    wf.start("approved-after", "b-1", id="after-1")
    wf.drain()
    wf.signal("approve", "first", key="b-1")
    wf.drain()
    assert wf.get_status("after-1").output == "first"
    forked = wf.fork("after-1", from_step="prepare")
    wf.drain()
    assert wf.get_status(forked.id).status == "suspended"
    wf.signal("approve", "second", key="b-1")
    wf.drain()
    assert wf.get_status(forked.id).output == "second"


def test_children_before_the_step_are_the_originals_and_later_ones_start_again(
    define, workflow_clock, runs
):
    @define("packer")
    def packer(ctx, input):
        runs[f"packer:{input}"] += 1
        return ctx.step("pack", lambda step: f"packed {input}")

    @define("parent")
    def parent(ctx, input):
        first = ctx.start_child("packer", "first")
        ctx.step("between", lambda step: runs.update(["between"]))
        first_result = first.result()

        def after(step):
            runs["after"] += 1
            if runs["after"] == 1:
                raise RuntimeError("bug")
            return 1

        ctx.step("after", after, retry=wf.Retry(attempts=1))
        second = ctx.start_child("packer", "second")
        return [first_result, second.result()]

    wf.start("parent", None, id="p-1")
    for _ in range(3):
        wf.drain()
    assert wf.get_status("p-1").status == "failed"
    # From "between": the first child's start is copied, its end (awaited after) is seen again.
    forked = wf.fork("p-1", from_step="between", new_id="p-2")
    for _ in range(3):
        wf.drain()
    status = wf.get_status("p-2", children=True)
    assert status.status == "completed"
    assert status.output == ["packed first", "packed second"]
    assert [c.id for c in status.children] == ["p-2/packer#2"]  # only the later child is its own
    assert WorkflowInstance.objects.filter(workflow="packer").count() == 2
    assert forked.created


def test_a_fork_inside_a_step_gets_the_id_derived_from_the_step(failed_order, define):
    @define("rerunner")
    def rerunner(ctx, input):
        return ctx.step("rerun", lambda step: wf.fork(input, from_step="ship").id)

    wf.start("rerunner", failed_order, id="ops-1")
    wf.drain()
    assert wf.get_status("ops-1").output == "ops-1:rerun/shipping#1"
    assert WorkflowInstance.objects.get(pk="ops-1:rerun/shipping#1").forked_from == failed_order


def test_a_fork_is_readable_with_a_codec(settings, shipping, workflow_clock, runs):
    from django_workflows.codecs import AesGcmPayloadCodec

    settings.DJANGO_WORKFLOWS = {
        **getattr(settings, "DJANGO_WORKFLOWS", {}),
        "CODEC": AesGcmPayloadCodec(keys={"k1": "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="}),
    }
    shipping(broken=True)
    wf.start("shipping", {"order": "o-5", "total": 5}, id="order-5")
    wf.drain()
    shipping(broken=False)
    forked = wf.fork("order-5", from_step="ship")
    stored = JournalEntry.objects.get(instance_id=forked.id, name="charge").document
    assert isinstance(stored["result"], str) and stored["result"].startswith("$wf")
    assert isinstance(WorkflowInstance.objects.get(pk=forked.id).input, str)
    wf.drain()
    status = wf.get_status(forked.id, journal=True)
    assert status.output["charged"] == 5 and status.output["tracking"] == "track-o-5"
    assert status.journal[0].result == {"charged": 5}


def test_a_fork_from_a_gather_branch_reruns_that_branch(define, workflow_clock, runs):
    @define("packing")
    def packing(ctx, input):
        def box(name):
            def run(step):
                runs[name] += 1
                if name == "box-b" and runs[name] == 1:
                    raise RuntimeError("bug")
                return name

            return lambda: ctx.step(name, run, retry=wf.Retry(attempts=1))

        boxes = ctx.gather(box("box-a"), box("box-b"), box("box-c"))
        return ctx.step("label", lambda step: "+".join(boxes))

    wf.start("packing", None, id="packing-1")
    wf.drain()
    assert wf.get_status("packing-1").status == "failed"
    before = dict(runs)
    forked = wf.fork("packing-1", from_step="box-b")
    copied = set(JournalEntry.objects.filter(instance_id=forked.id).values_list("name", flat=True))
    assert "box-b" not in copied and "label" not in copied
    wf.drain()
    assert wf.get_status(forked.id).output == "box-a+box-b+box-c"
    assert runs["box-b"] == before["box-b"] + 1
    # A sibling branch's step ran again only when it was first written after box-b.
    for name in ("box-a", "box-c"):
        assert runs[name] == before[name] + (name not in copied)
