"""ctx.continue_as_new(): the run ends and the instance starts over in one fenced write, same id,
a fresh journal, the new input and version; its signals not taken stay, its run timeout
restarts, and InstanceStatus.generation counts the restarts (docs/reference/context.md)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

import django_workflows as wf
from django_workflows.errors import WorkflowNotFoundError
from django_workflows.models import JournalEntry, Wait, WorkflowInstance
from tests.helpers import worker_thread

pytestmark = pytest.mark.django_db(transaction=True)


def _journal(id):
    return list(
        JournalEntry.objects.filter(instance_id=id).order_by("id").values_list("name", flat=True)
    )


@pytest.fixture
def counter(define):
    """Runs one step, then continues with n + 1 until n reaches 3; then waits for `go`."""

    @define("counts-up")
    def run(ctx, input):
        n = input["n"]
        ctx.step(f"work-{n}", lambda step: n * 10)
        if n < 3:
            ctx.continue_as_new({"n": n + 1})
            raise AssertionError("continue_as_new() returned")
        ctx.wait_for_signal("go", "go", key=ctx.instance_id)
        return {"n": n, "generation": ctx.generation}

    return run


def test_it_keeps_the_id_and_starts_the_journal_over_with_the_new_input(counter, events):
    wf.start("counts-up", {"n": 1}, id="c1")
    wf.drain()
    status = wf.get_status("c1", journal=True)
    assert status.status == "suspended", status.error
    assert status.generation == 2
    assert status.input == {"n": 3}
    # the third run's journal holds its own entries only
    assert [e.name for e in status.journal] == ["work-3", "go"]
    assert [w.signal for w in status.waits] == ["go"]
    continued = [e for e in events if e.type == "workflow-continued-as-new"]
    assert [(e.id, e.data["generation"]) for e in continued] == [("c1", 1), ("c1", 2)]
    wf.signal("go", key="c1")
    wf.drain()
    assert wf.result("c1", timeout="5s") == {"n": 3, "generation": 2}
    assert wf.get_status("c1").generation == 2
    assert [s.generation for s in wf.list_instances(workflow="counts-up")] == [2]
    assert WorkflowInstance.objects.count() == 1


def test_an_instance_that_never_continued_is_generation_0(counter):
    wf.start("counts-up", {"n": 3}, id="c0")
    assert wf.get_status("c0").generation == 0
    wf.drain()
    assert wf.get_status("c0").generation == 0
    assert wf.list_instances(workflow="counts-up")[0].generation == 0


def test_without_an_input_it_continues_with_the_same_one(define):
    @define("same-input")
    def run(ctx, input):
        ctx.step(f"seen-{ctx.generation}", lambda step: input)
        if ctx.generation < 2:
            ctx.continue_as_new()
        return {"input": input, "generation": ctx.generation}

    wf.start("same-input", {"order": "A-1", "items": [1, 2]}, id="same")
    wf.drain()
    assert wf.result("same", timeout="5s") == {
        "input": {"order": "A-1", "items": [1, 2]},
        "generation": 2,
    }
    assert _journal("same") == ["seen-2"]


def test_a_swallowed_continue_still_continues(define):
    @define("swallows")
    def run(ctx, input):
        if ctx.generation == 0:
            try:
                ctx.continue_as_new({"again": True})
            except BaseException:
                pass
            return "after the swallowed continue"
        return input

    wf.start("swallows", {}, id="sw")
    wf.drain()
    assert wf.result("sw", timeout="5s") == {"again": True}
    assert wf.get_status("sw").generation == 1


def test_signals_not_taken_before_the_continue_are_taken_by_the_next_run(define):
    """A signal sent before the continue and not taken is the next run's; one taken is not
    taken again, even when an earlier untaken one keeps the cursor back."""

    @define("takes-signals")
    def run(ctx, input):
        key = ctx.instance_id
        if ctx.generation == 0:
            first = ctx.wait_for_signal("first", "ping", key=key)
            later = ctx.wait_for_signal("later", "pong", key=key)
            ctx.continue_as_new({"taken": [first, later]})
        taken = input["taken"]
        taken.append(ctx.wait_for_signal(f"next-{ctx.generation}", "ping", key=key))
        if ctx.generation < 2:
            ctx.continue_as_new({"taken": taken})
        return taken

    wf.start("takes-signals", {}, id="ts")
    wf.signal("pong", "pong-1", key="ts")  # before the pings: an untaken one keeps the cursor
    wf.signal("ping", "ping-1", key="ts")
    wf.signal("pong", "pong-2", key="ts")  # never taken
    wf.signal("ping", "ping-2", key="ts")
    wf.drain()
    status = wf.get_status("ts", journal=True)
    assert status.generation == 2
    assert status.status == "suspended"  # no third ping: both were taken, neither again
    # The engine keeps the taken ids in its own entry; the journal shown is the run's own.
    assert _journal("ts")[0] == "$continued"
    assert [e.name for e in status.journal] == ["next-2"]
    wf.signal("ping", "ping-3", key="ts")
    wf.drain()
    assert wf.result("ts", timeout="5s") == ["ping-1", "pong-1", "ping-2", "ping-3"]


def test_a_signal_sent_while_the_first_run_works_reaches_the_next_run(define):
    working, sent = threading.Event(), threading.Event()

    def work(step):
        working.set()
        assert sent.wait(30)
        return "worked"

    @define("signalled-while-working")
    def run(ctx, input):
        key = ctx.instance_id
        if ctx.generation == 0:
            taken = ctx.wait_for_signal("first", "note", key=key)
            ctx.step("work", work)
            ctx.continue_as_new({"taken": taken})
        return [input["taken"], ctx.wait_for_signal("second", "note", key=key)]

    wf.start("signalled-while-working", {}, id="sww")
    wf.signal("note", "before", key="sww")
    with worker_thread(poll_interval="0.1s"):
        assert working.wait(30)
        wf.signal("note", "while working", key="sww")
        sent.set()
        assert wf.result("sww", timeout="30s") == ["before", "while working"]
    assert wf.get_status("sww").generation == 1


def test_waits_and_timers_go_with_the_run(define, workflow_clock):
    @define("waits-then-continues")
    def run(ctx, input):
        if ctx.generation == 0:
            outcome = ctx.wait_for_any(
                "either", ping=ctx.signal_wait("ping", key=ctx.instance_id), late=ctx.timer("1h")
            )
            ctx.continue_as_new({"won": outcome.key})
        ctx.sleep("nap", "2h")
        return input

    wf.start("waits-then-continues", {}, id="wtc")
    wf.drain()
    assert list(Wait.objects.filter(instance_id="wtc").values_list("signal", flat=True)) == ["ping"]
    wf.signal("ping", key="wtc")
    wf.drain()
    status = wf.get_status("wtc")
    assert status.generation == 1 and status.status == "suspended"
    assert not Wait.objects.filter(instance_id="wtc").exists()
    assert status.wake_at == workflow_clock.now() + timedelta(hours=2)  # the new run's sleep
    workflow_clock.advance("2h")
    wf.drain()
    assert wf.result("wtc", timeout="5s") == {"won": "ping"}


def test_it_can_switch_to_the_newest_or_a_given_version(define):
    @define("switches-versions", version=1)
    def v1(ctx, input):
        ctx.step("v1-step", lambda step: 1)
        ctx.continue_as_new({"from": 1}, version=2)

    @define("switches-versions", version=2)
    def v2(ctx, input):
        if input.get("from") == 1:
            ctx.continue_as_new({"from": 2}, version="latest")
        return {"ran": 2, "input": input}

    @define("switches-versions", version=3)
    def v3(ctx, input):
        if input.get("from") == 2:
            ctx.continue_as_new({"from": 3, "kept": True}, version=None)  # stays at 3
        return {"ran": 3, "input": input}

    wf.start("switches-versions", {}, id="v", version=1)
    wf.drain()
    status = wf.get_status("v")
    assert (status.version, status.generation) == (3, 3)
    assert wf.result("v", timeout="5s") == {"ran": 3, "input": {"from": 3, "kept": True}}


@pytest.mark.parametrize(
    "version, error, message",
    [
        (9, WorkflowNotFoundError, "version 9"),
        ("newest", TypeError, "must be None"),
        (0, ValueError, "1 or more"),
    ],
)
def test_a_bad_version_is_a_clear_error_and_nothing_is_written(define, version, error, message):
    @define("bad-version")
    def run(ctx, input):
        ctx.step("before", lambda step: "done")
        try:
            ctx.continue_as_new({"x": 1}, version=version)
        except error as raised:
            return str(raised)
        return "no error"

    wf.start("bad-version", {}, id="bv")
    wf.drain()
    assert message in wf.result("bv", timeout="5s")
    status = wf.get_status("bv")
    assert (status.generation, status.input) == (0, {})
    assert _journal("bv") == ["before"]


def test_an_input_that_is_not_json_is_a_type_error_and_nothing_is_written(define):
    @define("bad-input")
    def run(ctx, input):
        ctx.step("before", lambda step: "done")
        try:
            ctx.continue_as_new({"when": object()})
        except TypeError as error:
            return str(error)
        return "no error"

    wf.start("bad-input", {"a": 1}, id="bi")
    wf.drain()
    assert "continue_as_new" in wf.result("bi", timeout="5s")
    status = wf.get_status("bi")
    assert (status.generation, status.input) == (0, {"a": 1})
    assert _journal("bi") == ["before"]


def test_inside_a_step_it_is_refused_and_nothing_is_written(define):
    @define("continues-in-a-step")
    def run(ctx, input):
        ctx.step("before", lambda step: "done")
        ctx.step("inside", lambda step: ctx.continue_as_new({"x": 1}))

    wf.start("continues-in-a-step", {}, id="is")
    wf.drain()
    status = wf.get_status("is")
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowDefinitionError"
    assert "inside a step" in status.error["message"]
    assert (status.generation, status.input) == (0, {})
    assert _journal("is")[0] == "before"


def test_inside_a_gather_branch_it_is_refused_and_nothing_is_written(define):
    @define("continues-in-a-branch")
    def run(ctx, input):
        ctx.gather(
            lambda: ctx.step("left", lambda step: 1),
            lambda: ctx.continue_as_new({"x": 1}),
        )

    wf.start("continues-in-a-branch", {}, id="ib")
    wf.drain()
    status = wf.get_status("ib")
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowDefinitionError"
    assert "gather() branch" in status.error["message"]
    assert (status.generation, status.input) == (0, {})


def test_the_run_timeout_restarts_from_the_continue(define, workflow_clock):
    @define("times-out", timeout="1h")
    def run(ctx, input):
        ctx.wait_for_signal(f"go-{ctx.generation}", "go", key=ctx.instance_id)
        if ctx.generation < 2:
            ctx.continue_as_new()
        return ctx.generation

    wf.start("times-out", {}, id="to")
    started = workflow_clock.now()
    assert wf.get_status("to").deadline == started + timedelta(hours=1)
    wf.drain()
    workflow_clock.advance("50m")
    wf.signal("go", key="to")
    wf.drain()
    status = wf.get_status("to")
    assert status.generation == 1
    assert status.deadline == workflow_clock.now() + timedelta(hours=1)
    workflow_clock.advance("50m")  # past the first run's deadline, not the second's
    wf.signal("go", key="to")
    wf.drain()
    status = wf.get_status("to")
    assert (status.generation, status.status) == (2, "suspended")
    workflow_clock.advance("61m")  # past the third run's deadline
    wf.drain()
    status = wf.get_status("to")
    assert status.status == "failed" and status.error["name"] == "WorkflowTimeoutError"


def test_a_timeout_given_to_start_is_kept_through_the_generations(define, workflow_clock):
    @define("own-timeout", timeout="1h")
    def run(ctx, input):
        ctx.wait_for_signal(f"go-{ctx.generation}", "go", key=ctx.instance_id)
        ctx.continue_as_new()

    wf.start("own-timeout", {}, id="ot", timeout="3h")
    wf.drain()
    for generation in (1, 2):
        workflow_clock.advance("2h")
        wf.signal("go", key="ot")
        wf.drain()
        status = wf.get_status("ot")
        assert status.generation == generation
        assert status.deadline == workflow_clock.now() + timedelta(hours=3)


def test_the_new_run_starts_without_values_or_custom_status(define):
    @define("starts-clean")
    def run(ctx, input):
        if ctx.generation == 0:
            ctx.set_value("stage", "first run")
            ctx.set_status({"at": "first run"})
            ctx.step("first", lambda step: 1)
            ctx.continue_as_new()
        ctx.wait_for_signal("go", "go", key=ctx.instance_id)

    wf.start("starts-clean", {}, id="sc")
    wf.drain()
    status = wf.get_status("sc")
    assert (status.generation, status.custom_status, status.values) == (1, None, {})
    with pytest.raises(KeyError):
        wf.get_value("sc", "stage")


def test_its_children_are_closed_as_at_an_end_and_the_next_run_starts_its_own(define):
    @define("long-child")
    def child(ctx, input):
        ctx.wait_for_signal("never", "never", key=ctx.instance_id)

    @define("continuing-parent")
    def parent(ctx, input):
        closing = ctx.start_child("long-child", {}, parent_close="cancel")
        kept = ctx.start_child("long-child", {}, parent_close="abandon")
        if ctx.generation == 0:
            ctx.continue_as_new()
        ctx.wait_for_signal("go", "go", key=ctx.instance_id)
        return [closing.id, kept.id]

    wf.start("continuing-parent", {}, id="cp")
    wf.drain()
    children = {s.id: s.status for s in wf.list_instances(parent_id="cp")}
    assert children == {
        "cp/long-child#1": "cancelled",
        "cp/long-child#2": "suspended",
        "cp~1/long-child#1": "suspended",
        "cp~1/long-child#2": "suspended",
    }


def test_a_cancel_requested_before_the_continue_reaches_the_next_run(define):
    @define("cancelled-meanwhile")
    def run(ctx, input):
        if ctx.generation == 0:
            ctx.step("cancel me", lambda step: wf.cancel(ctx.instance_id, "stop").accepted)
            ctx.continue_as_new()
        ctx.step("never", lambda step: 1)

    wf.start("cancelled-meanwhile", {}, id="cm")
    wf.drain()
    status = wf.get_status("cm")
    assert status.status == "cancelled"
    assert "never" not in _journal("cm")


def test_ten_thousand_steps_in_runs_of_a_hundred_never_pass_a_hundred_entries(define, settings):
    """The issue's judged test: continuing every 100 steps, 10,000 steps run with a journal
    that never passes 100 entries (the engine itself refuses a 101st: MAX_ENTRIES)."""
    settings.DJANGO_WORKFLOWS = {
        **getattr(settings, "DJANGO_WORKFLOWS", {}),
        "JOURNAL": {"MAX_ENTRIES": 100},
    }
    sizes: list[int] = []

    def last_step(step):
        # The 100th step's start is written: the journal holds the whole run's entries now.
        sizes.append(JournalEntry.objects.filter(instance_id="long").count())
        return True

    @define("runs-for-good")
    def run(ctx, input):
        done = input["done"]
        for i in range(99):
            ctx.step(f"step-{i}", lambda step: None)
        ctx.step("step-99", last_step)
        done += 100
        if done < 10_000:
            ctx.continue_as_new({"done": done})
        return done

    wf.start("runs-for-good", {"done": 0}, id="long")
    with worker_thread(poll_interval="0.1s"):
        assert wf.result("long", timeout="300s") == 10_000
    assert len(sizes) == 100
    assert all(count == 100 for count in sizes), sizes
    status = wf.get_status("long")
    assert status.generation == 99
    assert len(_journal("long")) == 100


def test_a_continue_without_the_lease_writes_nothing(counter):
    """The restart is fenced by the lease token like every write of an execution."""
    from django_workflows import clock
    from django_workflows.store import instances as store

    wf.start("counts-up", {"n": 3}, id="fenced")
    wf.drain()
    before = _journal("fenced")
    assert before == ["work-3", "go"]
    now = clock.now()
    write = store.InstanceWrite(
        now=now,
        changes={"status": "pending", "input": {"n": 1}, "generation": 1},
        release=store.Release(now, [], 0, had_waits=True),
        restart=True,
    )
    assert store.write("default", "fenced", "not-the-lease-token", write) is None
    status = wf.get_status("fenced")
    assert (status.generation, status.input, status.status) == (0, {"n": 3}, "suspended")
    assert _journal("fenced") == before
    assert [w.signal for w in status.waits] == ["go"]


def test_the_runs_compensations_do_not_run(define):
    undone: list[str] = []

    @define("registers-compensations")
    def run(ctx, input):
        if ctx.generation == 0:
            ctx.step("charge", lambda step: "ch_1", compensate=lambda r, step: undone.append(r))
            ctx.continue_as_new()
        return "second run"

    wf.start("registers-compensations", {}, id="rc")
    wf.drain()
    assert wf.result("rc", timeout="5s") == "second run"
    assert undone == []
    assert _journal("rc") == []
