"""Occurrences prepared ahead of their time, written at it (issue 15, "Schedules at scale"): a
worker's schedules thread plans the occurrences coming due and prepares their rows, writing
nothing; at the time one transaction takes the schedules whose plans still hold and inserts
their instances, which are what start() writes, created at that time. A plan that no longer
holds (a pause, an upsert, a removal, an instance in the way, the clock past its window) writes
nothing, and the tick starts the occurrence as it would have without it.

The manual clock starts on 1 January 2026; `every="1m"` counts from the epoch.
"""

from __future__ import annotations

import secrets
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

import django_workflows as wf
from django_workflows import Concurrency, Schedule, clock, schedules
from django_workflows.models import Status, WorkflowInstance, WorkflowSchedule
from django_workflows.schedules import runner
from django_workflows.schedules.declared import declared_in_code
from django_workflows.schedules.ids import occurrence_id
from django_workflows.schedules.runner import Scheduler
from django_workflows.schedules.state import State
from django_workflows.store import schedules as schedule_store

from ..helpers import wait_until, worker_thread
from .test_schedule_batches import Traced, written

COUNT = 12
LEASE = timedelta(minutes=5)


def prepared_scheduler(workflows: list[str]) -> Scheduler:
    """A worker's scheduler whose occurrences coming due are prepared (nothing written)."""
    scheduler = Scheduler("default", "ahead-worker", workflows, LEASE)
    scheduler._synced_at = clock.now()  # no declared schedules to sync
    while scheduler.ahead.prepare(clock.now(), declared_in_code(workflows)):
        pass
    return scheduler


def next_minute():
    return (clock.now() + timedelta(minutes=1)).replace(second=0, microsecond=0)


@pytest.mark.django_db
def test_an_occurrence_prepared_ahead_is_written_at_its_time_as_start_writes_it(
    define, workflow_clock, settings
):
    settings.DJANGO_WORKFLOWS = {
        **(getattr(settings, "DJANGO_WORKFLOWS", None) or {}),
        "STEP_MIDDLEWARE": [f"{Traced.__module__}.Traced"],
    }

    @define("ahead", tags=["nightly"], timeout="1h")
    def ahead(ctx, input):
        return input

    for index in range(COUNT):
        schedules.upsert(f"ahead-{index:02d}", workflow="ahead", every="1m", input={"n": 1})
    wf.signal("anything", "arrived", key="k")  # a signal sent before: not the instances'
    at = next_minute()
    workflow_clock.advance(at - clock.now() - timedelta(seconds=10))
    revisions = dict(WorkflowSchedule.objects.values_list("id", "revision"))
    scheduler = prepared_scheduler(["ahead"])
    assert len(scheduler.ahead.prepared) == COUNT and scheduler.ahead.next_at() == at
    assert not WorkflowInstance.objects.exists()  # nothing written ahead
    assert dict(WorkflowSchedule.objects.values_list("id", "revision")) == revisions
    wf.signal("anything", "later", key="k")  # the instances' cursor is read when they are written

    workflow_clock.advance("10.5s")
    now = clock.now()
    assert scheduler.ahead.write_due(now) == COUNT
    assert not scheduler.ahead.prepared
    assert scheduler.run_due(now) == 0  # the tick finds nothing more to start

    started = WorkflowInstance.objects.filter(schedule_id__startswith="ahead-")
    assert sorted(started.values_list("id", flat=True)) == sorted(
        occurrence_id(f"ahead-{index:02d}", at) for index in range(COUNT)
    )
    expected = written(wf.start("ahead", {"n": 1}, id="by-hand").id)
    for instance in started:
        assert written(instance.pk) == expected, instance.pk
        assert instance.created_at == instance.updated_at == instance.wake_at == now
        assert instance.scheduled_at == at
        assert instance.deadline == now + timedelta(hours=1)
    for schedule in WorkflowSchedule.objects.all():
        assert State.of(schedule).runs == 1
        assert State.of(schedule).cursor == at
        assert schedule.wake_at == at + timedelta(minutes=1)
        assert schedule.revision == revisions[schedule.pk] + 1
        assert schedule.lease_token is None


@pytest.mark.django_db
def test_values_written_ahead_keep_every_character(define, workflow_clock):
    @define("ahead")
    def ahead(ctx, input):
        return input

    # Whole column values: "NULL" (a concurrency key), "" (an input).
    @define("keyed", concurrency=[Concurrency(limit=1, key=lambda input: input or "-")])
    def keyed(ctx, input):
        return input

    text = 'l\'été \\ "quoted" 100% %s {braces}, [1,2] NULL \u2603'
    schedules.upsert("ahead-100_x.y:z", workflow="ahead", every="1m", input={"text": text})
    schedules.upsert("ahead-null", workflow="keyed", every="1m", input="NULL")
    schedules.upsert("ahead-empty", workflow="keyed", every="1m", input="")
    at = next_minute()
    workflow_clock.advance(at - clock.now() - timedelta(seconds=5))
    scheduler = prepared_scheduler(["ahead", "keyed"])
    workflow_clock.advance("6s")
    assert scheduler.ahead.write_due(clock.now()) == 3
    keys = dict(WorkflowInstance.objects.values_list("schedule_id", "concurrency_key"))
    assert keys["ahead-null"] == "NULL" and keys["ahead-empty"] == "-"
    assert wf.get_status(occurrence_id("ahead-null", at)).input == "NULL"
    assert wf.get_status(occurrence_id("ahead-empty", at)).input == ""
    instance = WorkflowInstance.objects.get(schedule_id="ahead-100_x.y:z")
    assert instance.pk == occurrence_id("ahead-100_x.y:z", at)
    assert wf.get_status(instance.pk).input == {"text": text}


@pytest.mark.django_db
def test_a_prepared_insert_stays_within_the_servers_packet(define, workflow_clock, monkeypatch):
    if connection.vendor != "mysql":
        pytest.skip("only MySQL's and MariaDB's statements are limited by a packet size")
    from django_workflows.store.backends.mysql.backend import MySQLBackend

    @define("ahead")
    def ahead(ctx, input):
        return input

    # Random text each, which a codec cannot compress much: 60 rows of over 2 KB.
    inputs = {f"ahead-{index:02d}": secrets.token_urlsafe(1_600) for index in range(COUNT * 5)}
    for id, input in inputs.items():
        schedules.upsert(id, workflow="ahead", every="1m", input=input)
    at = next_minute()
    workflow_clock.advance(at - clock.now() - timedelta(seconds=5))
    scheduler = prepared_scheduler(["ahead"])
    monkeypatch.setattr(MySQLBackend, "max_allowed_packet", lambda self: 32_000)
    workflow_clock.advance("6s")
    with CaptureQueriesContext(connection) as queries:
        assert scheduler.ahead.write_due(clock.now()) == COUNT * 5
    inserts = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("INSERT")]
    assert len(inserts) > 1 and all(len(sql.encode()) <= 32_000 for sql in inserts)
    started = WorkflowInstance.objects.values_list("schedule_id", "id")
    assert {schedule: wf.get_status(id).input for schedule, id in started} == inputs


@pytest.mark.django_db
def test_a_plan_made_before_a_pause_an_upsert_or_a_removal_writes_nothing(define, workflow_clock):
    @define("ahead")
    def ahead(ctx, input):
        return input

    for name in ("paused", "changed", "removed", "recreated", "kept"):
        schedules.upsert(f"ahead-{name}", workflow="ahead", every="1m", input="before")
    at = next_minute()
    workflow_clock.advance(at - clock.now() - timedelta(seconds=5))
    scheduler = prepared_scheduler(["ahead"])
    assert len(scheduler.ahead.prepared) == 5
    schedules.pause("ahead-paused")
    schedules.upsert("ahead-changed", workflow="ahead", every="1m", input="after")
    schedules.remove("ahead-removed")
    schedules.remove("ahead-recreated")
    # Saved again: a new row at revision 1, as the one the plan was made from, due at `at`.
    schedules.upsert("ahead-recreated", workflow="ahead", every="1m", input="after")
    assert WorkflowSchedule.objects.get(pk="ahead-recreated").revision == 1

    workflow_clock.advance("6s")
    assert scheduler.ahead.write_due(clock.now()) == 1  # "kept" alone
    assert scheduler.tick() == 2  # the tick starts the others as their schedules are now
    started = {  # the inputs as stored, decoded (a codec may encrypt them)
        schedule_id: wf.get_status(id).input
        for schedule_id, id in WorkflowInstance.objects.values_list("schedule_id", "id")
    }
    assert started == {
        "ahead-kept": "before",
        "ahead-changed": "after",
        "ahead-recreated": "after",
    }


@pytest.mark.django_db
def test_an_unfinished_instance_in_the_way_leaves_the_occurrence_to_overlap(
    define, workflow_clock, events
):
    @define("ahead")
    def ahead(ctx, input):
        return input

    schedules.upsert("ahead-skip", workflow="ahead", every="1m", overlap="skip")
    schedules.upsert("ahead-allow", workflow="ahead", every="1m", overlap="allow")
    at = next_minute()
    workflow_clock.advance(at - clock.now() - timedelta(seconds=5))
    scheduler = prepared_scheduler(["ahead"])
    assert len(scheduler.ahead.prepared) == 2
    running = {id: schedules.trigger(id).id for id in ("ahead-skip", "ahead-allow")}

    workflow_clock.advance("6s")
    assert scheduler.ahead.write_due(clock.now()) == 1  # overlap="allow" starts beside it
    assert scheduler.tick() == 1  # overlap="skip": the tick passes it over
    unfinished = WorkflowInstance.objects.filter(status=Status.PENDING)
    assert set(unfinished.values_list("id", flat=True)) == {
        *running.values(),
        occurrence_id("ahead-allow", at),
    }
    skipped = [(e.id, e.data["reason"]) for e in events if e.type == "schedule-skipped"]
    assert skipped == [("ahead-skip", "overlap")]
    assert State.of(WorkflowSchedule.objects.get(pk="ahead-skip")).cursor == at


@pytest.mark.django_db
def test_a_schedule_another_workers_claim_holds_is_left_to_it(define, workflow_clock):
    @define("ahead")
    def ahead(ctx, input):
        return input

    schedules.upsert("ahead-claimed", workflow="ahead", every="1m")
    at = next_minute()
    workflow_clock.advance(at - clock.now() - timedelta(seconds=5))
    scheduler = prepared_scheduler(["ahead"])
    workflow_clock.advance("6s")
    now = clock.now()
    # Another worker claimed it at its time (a claim moves no revision on) and is starting it.
    [claimed] = schedule_store.claim_schedules(
        "default",
        owner="other-worker",
        token="other-token",
        now=now,
        lease_until=now + LEASE,
        limit=10,
        workflows=["ahead"],
    )
    assert scheduler.ahead.write_due(now) == 0
    assert not WorkflowInstance.objects.exists()
    assert WorkflowSchedule.objects.get(pk="ahead-claimed").lease_token == "other-token"


@pytest.mark.django_db
def test_a_plan_holds_only_until_the_next_occurrence(define, workflow_clock):
    @define("ahead")
    def ahead(ctx, input):
        return input

    schedules.upsert("ahead-late", workflow="ahead", every="1m", missed="all", overlap="allow")
    at = next_minute()
    workflow_clock.advance(at - clock.now() - timedelta(seconds=5))
    scheduler = prepared_scheduler(["ahead"])
    assert len(scheduler.ahead.prepared) == 1

    workflow_clock.advance("65s")  # the worker was held up past the next occurrence
    assert scheduler.ahead.write_due(clock.now()) == 0
    assert scheduler.tick() == 1  # the tick starts both, as missed="all" says
    assert sorted(WorkflowInstance.objects.values_list("scheduled_at", flat=True)) == [
        at,
        at + timedelta(minutes=1),
    ]


@pytest.mark.django_db
def test_a_schedule_left_to_the_tick_is_not_planned_again_until_it_changes(define, workflow_clock):
    @define("ahead", schedules=[Schedule("ahead-input", every="1m", input=lambda at: 1)])
    def ahead(ctx, input):
        return input

    wf.drain()  # the declared schedule synced
    at = next_minute()
    workflow_clock.advance(at - clock.now() - timedelta(seconds=10))
    scheduler = prepared_scheduler(["ahead"])
    stored = WorkflowSchedule.objects.get(pk="ahead-input")
    revision = stored.revision
    # An input function runs at the occurrence's time: the tick's, not a plan's.
    assert not scheduler.ahead.prepared
    assert scheduler.ahead.declined == {"ahead-input": (revision, stored.created_at)}
    planned = []
    original = scheduler.ahead._plan
    scheduler.ahead._plan = lambda *args: planned.append(args) or original(*args)
    in_code = declared_in_code(["ahead"])
    assert scheduler.ahead.prepare(clock.now(), in_code) is False
    assert not planned
    WorkflowSchedule.objects.filter(pk="ahead-input").update(revision=revision + 1)
    scheduler.ahead.prepare(clock.now(), in_code)
    assert len(planned) == 1

    workflow_clock.advance("11s")
    assert scheduler.tick() == 1
    assert wf.get_status(WorkflowInstance.objects.get(schedule_id="ahead-input").pk).input == 1


@pytest.mark.django_db(transaction=True)
def test_two_workers_with_the_same_plans_start_each_occurrence_once(define, workflow_clock):
    @define("ahead")
    def ahead(ctx, input):
        return input

    for index in range(COUNT * 5):
        schedules.upsert(f"ahead-{index:02d}", workflow="ahead", every="1m")
    at = next_minute()
    workflow_clock.advance(at - clock.now() - timedelta(seconds=5))
    schedulers = [prepared_scheduler(["ahead"]) for _ in range(2)]
    workflow_clock.advance("6s")
    now = clock.now()
    meet = threading.Barrier(2)
    started: list[int] = []
    raised: list[BaseException] = []

    def tick(scheduler: Scheduler) -> None:
        try:
            meet.wait(10)
            started.append(scheduler.tick(now))
        except BaseException as error:
            raised.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=tick, args=(s,)) for s in schedulers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not raised
    assert sum(started) == COUNT * 5
    assert WorkflowInstance.objects.count() == COUNT * 5
    for schedule in WorkflowSchedule.objects.all():
        assert State.of(schedule).runs == 1, schedule.pk
        assert schedule.wake_at == at + timedelta(minutes=1)


@pytest.mark.django_db(transaction=True)
def test_the_schedules_thread_wakes_at_the_prepared_time_not_at_its_next_poll(define, monkeypatch):
    @define("ahead-seconds")
    def ahead(ctx, input):
        return "done"

    # Neither the poll nor the preparations' own cadence wakes the thread within 30 s: only
    # the time of its soonest plan does.
    monkeypatch.setattr(runner, "PREPARE_EVERY", timedelta(minutes=1))
    schedules.upsert("ahead-seconds", workflow="ahead-seconds", every="4s")
    with worker_thread(
        id="ahead-thread", workflows=["ahead-seconds"], poll_interval="30s"
    ) as worker:
        assert wait_until(lambda: worker.scheduler.ahead.next_at() is not None, 10)
        at = worker.scheduler.ahead.next_at()
        assert wait_until(
            lambda: WorkflowInstance.objects.filter(scheduled_at=at).exists(),
            (at - clock.now()).total_seconds() + 5,
        )
        instance = WorkflowInstance.objects.get(scheduled_at=at)
        assert at <= instance.created_at < at + timedelta(seconds=5)


@pytest.mark.django_db(transaction=True)
def test_an_idle_schedules_thread_reads_whats_coming_once_every_prepare_every(define, monkeypatch):
    """A tick that handles nothing is its claim alone: the schedules coming due are read after
    a tick that handled some, else once every PREPARE_EVERY."""

    @define("ahead-idle")
    def idle(ctx, input):
        return "done"

    monkeypatch.setattr(runner, "PREPARE_EVERY", timedelta(seconds=0.6))
    scheduler = Scheduler("default", "idle-worker", ["ahead-idle"], timedelta(seconds=30))
    ticks: list[int] = []
    prepared: list[float] = []
    tick, prepare = scheduler.tick, scheduler.ahead.prepare

    def counted_tick(*args, **kwargs):
        ticks.append(tick(*args, **kwargs))
        return ticks[-1]

    def counted_prepare(*args, **kwargs):
        prepared.append(len(ticks))
        return prepare(*args, **kwargs)

    monkeypatch.setattr(scheduler, "tick", counted_tick)
    monkeypatch.setattr(scheduler.ahead, "prepare", counted_prepare)
    thread = threading.Thread(target=scheduler.serve, args=(lambda: 0.05,))
    started = time.monotonic()
    thread.start()
    try:
        assert wait_until(lambda: len(ticks) >= 20, 10)
        idle_ticks, idle_preparations = len(ticks), len(prepared)
        idle_seconds = time.monotonic() - started
        schedules.upsert("ahead-idle", workflow="ahead-idle", every="1s")
        assert wait_until(lambda: any(ticks[idle_ticks:]), 10)  # a tick starts its occurrence
        handled_at = next(n for n in range(idle_ticks, len(ticks)) if ticks[n]) + 1
        assert wait_until(lambda: prepared[-1] >= handled_at, 5)
    finally:
        scheduler.stopping.set()
        thread.join(10)

    # one preparation at the start, then one every 0.6 s, whatever the ticks
    assert 1 <= idle_preparations <= 2 + idle_seconds / 0.6
    assert idle_preparations < idle_ticks / 3
    assert handled_at in prepared  # right after the tick that started it
    assert WorkflowInstance.objects.filter(workflow="ahead-idle").exists()
