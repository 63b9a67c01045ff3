"""Schedules, reviewed against "Run workflows on a schedule": the rules the first build missed.

Same conventions as test_schedules.py: `define` registers workflows for one test and unregisters
them afterwards; the manual clock starts on 1 January 2026. "Another process's code" is played
by swapping definitions in the registry between drains.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows import Schedule, schedules
from django_workflows.engine.registry import registry
from django_workflows.models import WorkflowInstance, WorkflowSchedule
from django_workflows.schedules.declared import sync_declared
from django_workflows.schedules.state import State
from django_workflows.store import schedules as schedule_store
from tests.schedules.helpers import at, started

pytestmark = pytest.mark.django_db


def swap(old, new) -> None:
    """Another process's code: `new` registered in place of `old`."""
    registry.unregister(old)
    registry.register(new)


@pytest.fixture
def reminder(define):
    @define("review-reminder")
    def remind(ctx, input):
        return input

    return remind


# -- declared schedules and versions ---------------------------------------------------------


def test_only_the_highest_registered_version_declares_schedules(define, workflow_clock):
    """Version 2 renames the schedule; version 1 stays registered for its unfinished instances.
    Only version 2's schedule runs, or the batch would run twice."""

    @define("renamed", version=1, schedules=[Schedule("batch-v1", cron="0 1 * * *")])
    def renamed_v1(ctx, input):
        return None

    @define("renamed", version=2, schedules=[Schedule("batch-v2", cron="0 1 * * *")])
    def renamed_v2(ctx, input):
        return None

    wf.drain()
    assert list(WorkflowSchedule.objects.values_list("id", flat=True)) == ["batch-v2"]


def test_a_schedule_the_new_version_drops_goes_while_the_old_version_stays_registered(
    define, workflow_clock
):
    @define("dropping", version=1, schedules=[Schedule("dropping-batch", cron="0 1 * * *")])
    def dropping_v1(ctx, input):
        return None

    sync_declared("default")  # the old code saved it

    @define("dropping", version=2)  # the new code: version 1 kept for its instances
    def dropping_v2(ctx, input):
        return None

    workflow_clock.advance("5m")
    sync_declared("default")
    assert not WorkflowSchedule.objects.filter(pk="dropping-batch").exists()


def test_a_new_version_declaring_the_schedule_the_same_way_keeps_its_missed_occurrence(
    define, workflow_clock
):
    """The documented invoice batch: missed="once" delays the batch over a deploy at 02:00,
    also when the deploy ships a new version of the workflow with the same schedule."""
    spec = {"cron": "0 2 * * *", "missed": "once"}

    @define("deployed", version=1, schedules=[Schedule("nightly-batch", **spec)])
    def deployed_v1(ctx, input):
        return "v1"

    wf.drain()  # saved at 00:00
    workflow_clock.set(at("2026-01-01T02:30"))  # every worker was down at 02:00: the deploy
    registry.unregister(deployed_v1)

    @define("deployed", version=2, schedules=[Schedule("nightly-batch", **spec)])
    def deployed_v2(ctx, input):
        return "v2"

    wf.drain()
    assert started("nightly-batch") == ["nightly-batch@2026-01-01T02:00:00.000Z"]
    assert wf.get_status("nightly-batch@2026-01-01T02:00:00.000Z").output == "v2"
    assert schedules.get("nightly-batch").version == 2


def test_a_paused_schedule_stays_paused_across_versions_that_declare_it_the_same_way(
    define, workflow_clock
):
    spec = {"cron": "0 * * * *"}

    @define("stable", version=1, schedules=[Schedule("stable-hourly", **spec)])
    def stable_v1(ctx, input):
        return None

    sync_declared("default")
    schedules.pause("stable-hourly")
    registry.unregister(stable_v1)

    @define("stable", version=2, schedules=[Schedule("stable-hourly", **spec)])
    def stable_v2(ctx, input):
        return None

    workflow_clock.advance("1m")
    sync_declared("default")  # the new code takes it over, as it is
    status = schedules.get("stable-hourly")
    assert (status.version, status.paused) == (2, True)

    swap(stable_v2, stable_v1)  # an old process, while the new code confirms it: left alone
    workflow_clock.advance("1m")
    sync_declared("default")
    assert schedules.get("stable-hourly").version == 2

    workflow_clock.advance("5m")  # a rollback: nobody confirms version 2 any more
    sync_declared("default")
    status = schedules.get("stable-hourly")
    assert (status.version, status.paused) == (1, True)
    registry.register(stable_v2)  # for the fixture's clean-up


def test_a_worker_whose_code_does_not_declare_it_leaves_it_to_one_within_the_minute(
    define, workflow_clock
):
    """Mid-rollout, a worker of the old code claims the schedule that the new code adds, and
    hands it back. A worker whose code declares it still finds the occurrence within a minute
    of its time, so missed="skip" starts it: a worker was up."""

    @define("rolled", schedules=[Schedule("rolled-hourly", cron="0 * * * *")])
    def rolled_new(ctx, input):
        return None

    wf.drain()
    workflow_clock.set(at("2026-01-01T00:59"))
    wf.drain()  # the new code confirms it
    registry.unregister(rolled_new)

    @define("rolled")  # the old code: it registers the workflow, without the schedule
    def rolled_old(ctx, input):
        return None

    workflow_clock.set(at("2026-01-01T01:00"))
    wf.drain()  # an old worker claims it first, and hands it back
    assert started("rolled-hourly") == []

    swap(rolled_old, rolled_new)
    workflow_clock.set(at("2026-01-01T01:00:10"))
    wf.drain()
    assert started("rolled-hourly") == ["rolled-hourly@2026-01-01T01:00:00.000Z"]


# -- a run that repeats after a crash --------------------------------------------------------


@pytest.fixture
def crash_after_starting(monkeypatch):
    """The first write of each schedule's run fails, as if the worker died after starting its
    occurrences: the run repeats once the lease expires. (The first batch write that includes
    it fails too: the tick then runs it alone, and its write fails.)"""
    crashed: set[str] = set()
    crashed_in_batch: set[str] = set()
    real_write = schedule_store.write_schedule
    real_batch_write = schedule_store.write_schedules

    def batch_write(using, token, *, now, writes):
        first = {id for id, _, _ in writes} - crashed_in_batch
        if first:
            crashed_in_batch.update(first)
            raise RuntimeError("the worker died before its write")
        return real_batch_write(using, token, now=now, writes=writes)

    def write(using, id, token, **kwargs):
        if id not in crashed:
            crashed.add(id)
            raise RuntimeError("the worker died before its write")
        return real_write(using, id, token, **kwargs)

    monkeypatch.setattr(schedule_store, "write_schedule", write)
    monkeypatch.setattr(schedule_store, "write_schedules", batch_write)
    return crashed


@pytest.mark.parametrize("overlap", ["skip", "cancel-previous", "buffer-one"])
def test_a_run_repeated_after_a_crash_does_not_take_its_own_instance_for_an_overlap(
    define, workflow_clock, events, crash_after_starting, overlap
):
    @define("crashy", schedules=[Schedule("crashy", every="1h", overlap=overlap, limit=1)])
    def crashy(ctx, input):
        ctx.sleep("long", "10m")

    wf.drain()
    workflow_clock.advance("1h")
    wf.drain()  # starts crashy@01:00, then its write fails
    assert crash_after_starting == {"crashy"}
    workflow_clock.advance("31s")  # the lease expired: the run repeats
    wf.drain()
    [id] = started("crashy")
    assert wf.get_status(id).status == "suspended"  # not cancelled by its own occurrence
    assert [e for e in events if e.type == "schedule-skipped"] == []
    assert State.of(WorkflowSchedule.objects.get(pk="crashy")).runs == 1
    assert schedules.get("crashy").next_at is None  # limit=1: it ended


# -- the client --------------------------------------------------------------------------------


def test_remove_is_not_refused_because_a_worker_wrote_to_the_schedule_meanwhile(
    reminder, workflow_clock, monkeypatch
):
    schedules.upsert("busy", workflow="review-reminder", every="1h", input={"n": 1})
    real_get = schedule_store.get_schedule
    wrote = []

    def get_then_a_worker_writes(using, id):
        row = real_get(using, id)
        if row is not None and not wrote:  # between remove()'s read and its delete
            wrote.append(id)
            now = workflow_clock.now()
            [claimed] = schedule_store.claim_schedules(
                using,
                owner="w",
                token="t",
                now=now + timedelta(hours=1),
                lease_until=now + timedelta(hours=2),
                limit=1,
                workflows=["review-reminder"],
            )
            assert schedule_store.write_schedule(
                using, id, "t", now=now, state=claimed.state, wake_at=None, release=True
            )
        return row

    monkeypatch.setattr(schedule_store, "get_schedule", get_then_a_worker_writes)
    assert schedules.remove("busy") is True
    assert wrote == ["busy"]
    assert not WorkflowSchedule.objects.filter(pk="busy").exists()


def test_resume_of_a_schedule_that_is_not_paused_changes_nothing(reminder, workflow_clock):
    schedules.upsert("steady", workflow="review-reminder", every="1h", overlap="allow")
    workflow_clock.advance("1h")  # 01:00 is due; no worker has found it yet
    before = WorkflowSchedule.objects.get(pk="steady")
    assert schedules.resume("steady").paused is False
    after = WorkflowSchedule.objects.get(pk="steady")
    assert (after.state, after.wake_at, after.revision) == (
        before.state,
        before.wake_at,
        before.revision,
    )
    wf.drain()
    assert started("steady") == ["steady@2026-01-01T01:00:00.000Z"]


def test_trigger_reports_whether_it_created_the_instance(reminder, workflow_clock):
    schedules.upsert("twice", workflow="review-reminder", every="1d", input={"n": 2})
    first = schedules.trigger("twice")
    second = schedules.trigger("twice")  # the same millisecond: the same occurrence
    assert first.id == second.id == "twice@2026-01-01T00:00:00.000Z"
    assert (first.created, second.created) == (True, False)
    assert type(first.status) is type(second.status) is wf.Status  # not a str for the second
    assert started("twice") == [first.id]


def test_trigger_of_an_occurrence_deleted_right_after_it_started_raises_not_found(
    reminder, workflow_clock
):
    schedules.upsert("gone", workflow="review-reminder", every="1d", input={"n": 1})
    seen: list[str] = []

    def delete_after_the_insert(execute, sql, params, many, context):
        # The first read of the instance after its INSERT is trigger()'s own: delete it first.
        if seen == ["insert"] and sql.startswith("SELECT") and "workflowinstance" in sql:
            seen.append("deleted")
            WorkflowInstance.objects.filter(schedule_id="gone").delete()
        elif (sql.startswith("INSERT") and "workflowinstance" in sql) or "dw_start_v1(" in sql:
            seen.append("insert")  # the statement, or PostgreSQL's start function
        return execute(sql, params, many, context)

    with connection.execute_wrapper(delete_after_the_insert):
        with pytest.raises(wf.WorkflowNotFoundError, match="deleted right after it started"):
            schedules.trigger("gone")
    assert seen == ["insert", "deleted"]


def test_upsert_refuses_an_id_the_code_declares_before_a_worker_saved_it(define, workflow_clock):
    @define("coded", schedules=[Schedule("coded-batch", every="1h")])
    def coded(ctx, input):
        return None

    with pytest.raises(wf.WorkflowStateError, match="declared"):
        schedules.upsert("coded-batch", workflow="coded", every="2h")
    assert not WorkflowSchedule.objects.exists()


# -- buffer-one ------------------------------------------------------------------------------


def test_an_instance_that_ends_while_a_process_confirms_the_schedule_still_wakes_it(
    define, workflow_clock, monkeypatch
):
    """The end of the running instance makes a buffered occurrence due at once; a process that
    read the schedule just before, to confirm it, must not write the old wake time back."""
    from django_workflows.worker import Worker

    @define("buffered", schedules=[Schedule("buffered", every="1h", overlap="buffer-one")])
    def buffered(ctx, input):
        ctx.sleep("long", "150m")

    wf.drain()
    workflow_clock.set(at("2026-01-01T01:00"))
    wf.drain()  # buffered@01:00 starts, and sleeps; the schedule is confirmed at 01:00
    workflow_clock.set(at("2026-01-01T02:00"))
    Worker().scheduler.run_due(workflow_clock.now())  # 02:00 is buffered, checked again at 02:01
    assert WorkflowSchedule.objects.get(pk="buffered").wake_at == at("2026-01-01T02:01")

    workflow_clock.set(at("2026-01-01T02:00:30"))
    real_list = schedule_store.list_schedules

    def read_then_the_instance_ends(using, **kwargs):
        rows = real_list(using, **kwargs)
        schedule_store.wake_schedule(using, "buffered", workflow_clock.now())
        return rows

    monkeypatch.setattr(schedule_store, "list_schedules", read_then_the_instance_ends)
    sync_declared("default")
    assert WorkflowSchedule.objects.get(pk="buffered").wake_at == at("2026-01-01T02:00:30")


# -- testing with the manual clock -------------------------------------------------------------


def test_a_test_that_moves_the_clock_by_a_day_starts_the_batchs_first_occurrence(
    define, workflow_clock
):
    @define(
        "first-batch",
        schedules=[
            Schedule("first-monthly", cron="0 2 1 * *", tz="America/New_York", missed="once")
        ],
    )
    def first_batch(ctx, input):
        return None

    workflow_clock.advance("1d")
    wf.drain()
    assert started("first-monthly") == ["first-monthly@2026-01-01T07:00:00.000Z"]
