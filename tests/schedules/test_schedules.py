"""Run workflows on a schedule: the docs page's "Run workflows on a schedule", rule by rule.

Each test declares its workflows (and their schedules) with `define`, which unregisters them
afterwards, so no other test sees these schedules. The manual clock starts on 1 January 2026.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import django_workflows as wf
from django_workflows import Schedule, schedules
from django_workflows.definitions import ScheduleOccurrence
from django_workflows.engine.registry import registry
from django_workflows.models import WorkflowInstance, WorkflowSchedule
from django_workflows.schedules.declared import sync_declared
from django_workflows.testing import ManualClock, use_clock
from tests.helpers import wait_until, worker_thread
from tests.schedules.helpers import at, started

pytestmark = pytest.mark.django_db

START = datetime(2026, 1, 1, tzinfo=UTC)


# -- declared schedules ----------------------------------------------------------------------------


def test_drain_starts_the_occurrences_the_clock_passed_with_the_documented_ids(
    define, workflow_clock
):
    seen = []

    def last_month(occurrence):
        return {"month": (occurrence.at - timedelta(days=1)).strftime("%Y-%m")}

    @define(
        "invoice-batch",
        schedules=[
            Schedule(
                "monthly-invoices",
                cron="0 2 1 * *",
                tz="America/New_York",
                missed="once",
                priority=10,
                input=last_month,
            )
        ],
    )
    def invoice_batch(ctx, input):
        seen.append((input, ctx.schedule))
        return {"rendered": 3}

    wf.drain()
    assert started("monthly-invoices") == []  # its first occurrence is on 1 January, 07:00 UTC
    workflow_clock.advance("7h")
    wf.drain()
    assert started("monthly-invoices") == ["monthly-invoices@2026-01-01T07:00:00.000Z"]
    [(input, occurrence)] = seen
    assert input == {"month": "2025-12"}
    assert occurrence == ScheduleOccurrence("monthly-invoices", at("2026-01-01T07:00"))
    row = WorkflowInstance.objects.get(pk="monthly-invoices@2026-01-01T07:00:00.000Z")
    assert (row.priority, row.scheduled_at) == (10, at("2026-01-01T07:00"))
    status = wf.get_status(row.pk)
    assert status.schedule_id == "monthly-invoices" and status.output == {"rendered": 3}
    assert [s.id for s in wf.list_instances(schedule_id="monthly-invoices")] == [row.pk]


def test_a_declared_schedule_is_saved_at_start_and_listed(define, workflow_clock):
    @define("nightly", schedules=[Schedule("nightly-report", cron="30 3 * * *", input={"a": 1})])
    def nightly(ctx, input):
        return input

    wf.drain()
    status = schedules.get("nightly-report")
    assert status.declared and status.workflow == "nightly" and status.version == 1
    assert status.cron == "30 3 * * *" and status.input == {"a": 1}
    assert status.next_at == at("2026-01-01T03:30")
    assert [s.id for s in schedules.list(workflow="nightly")] == ["nightly-report"]
    with pytest.raises(wf.WorkflowStateError, match="declared"):
        schedules.upsert("nightly-report", workflow="nightly", cron="0 4 * * *")
    with pytest.raises(wf.WorkflowStateError, match="declared"):
        schedules.remove("nightly-report")


def test_dst_the_02_00_batch_runs_at_02_00_new_york_time_on_both_sides(define, workflow_clock):
    @define("dst", schedules=[Schedule("at-two", cron="0 2 * * *", tz="America/New_York")])
    def dst(ctx, input):
        return None

    wf.drain()
    assert schedules.preview("at-two", start=at("2026-03-06T12:00"), count=4) == [
        at("2026-03-07T07:00"),  # EST
        at("2026-03-08T07:00"),  # 02:00 does not exist that day: 03:00 EDT, as late as the jump
        at("2026-03-09T06:00"),  # EDT
        at("2026-03-10T06:00"),
    ]


def test_missed_skip_starts_only_what_a_worker_finds_within_a_minute(
    define, workflow_clock, events
):
    @define("hourly", schedules=[Schedule("hourly", cron="0 * * * *")])
    def hourly(ctx, input):
        return None

    wf.drain()
    workflow_clock.advance("3h")  # 01:00, 02:00 and 03:00 passed; 03:00 is a minute old at most
    wf.drain()
    assert started("hourly") == ["hourly@2026-01-01T03:00:00.000Z"]
    [skipped] = [e for e in events if e.type == "schedule-skipped"]
    assert skipped.id == "hourly" and skipped.data["reason"] == "missed"
    assert (skipped.data["from"], skipped.data["to"]) == (
        at("2026-01-01T01:00"),
        at("2026-01-01T02:00"),
    )
    workflow_clock.advance("2h30m")  # 04:00 and 05:00 passed, both more than a minute ago
    wf.drain()
    assert started("hourly") == ["hourly@2026-01-01T03:00:00.000Z"]


def test_missed_once_starts_the_latest(define, workflow_clock):
    @define("hourly-once", schedules=[Schedule("hourly-once", cron="0 * * * *", missed="once")])
    def hourly(ctx, input):
        return None

    wf.drain()
    workflow_clock.advance("5h30m")
    wf.drain()
    assert started("hourly-once") == ["hourly-once@2026-01-01T05:00:00.000Z"]


def test_missed_all_starts_each_of_the_latest_hundred(define, workflow_clock, events):
    @define(
        "every-minute",
        schedules=[Schedule("every-minute", every="1m", missed="all", overlap="allow")],
    )
    def every_minute(ctx, input):
        return None

    wf.drain()
    workflow_clock.advance("3h")  # 180 occurrences
    wf.drain()
    ids = started("every-minute")
    assert len(ids) == 100
    assert ids[0] == "every-minute@2026-01-01T01:21:00.000Z"
    assert ids[-1] == "every-minute@2026-01-01T03:00:00.000Z"
    [skipped] = [e for e in events if e.type == "schedule-skipped"]
    assert (skipped.data["from"], skipped.data["to"]) == (
        at("2026-01-01T00:01"),
        at("2026-01-01T01:20"),
    )


def test_missed_all_needs_overlap_allow():
    with pytest.raises(ValueError, match="missed='all' needs overlap='allow'"):
        Schedule("bad", every="1m", missed="all")


def test_overlap_skip_passes_over_an_occurrence_while_the_last_one_runs(
    define, workflow_clock, events
):
    @define("slow", schedules=[Schedule("slow", every="1h")])
    def slow(ctx, input):
        ctx.sleep("long", "90m")

    wf.drain()
    workflow_clock.advance("1h")
    wf.drain()  # the 01:00 instance starts and sleeps until 02:30
    workflow_clock.advance("1h")
    wf.drain()  # 02:00: the 01:00 one is unfinished
    assert started("slow") == ["slow@2026-01-01T01:00:00.000Z"]
    [skipped] = [e for e in events if e.type == "schedule-skipped"]
    assert skipped.data["reason"] == "overlap" and skipped.data["from"] == at("2026-01-01T02:00")
    workflow_clock.advance("1h")
    wf.drain()  # 02:30 it ended; 03:00 starts
    assert started("slow") == ["slow@2026-01-01T01:00:00.000Z", "slow@2026-01-01T03:00:00.000Z"]


def test_overlap_allow_starts_anyway(define, workflow_clock):
    @define("slow-allow", schedules=[Schedule("slow-allow", every="1h", overlap="allow")])
    def slow(ctx, input):
        ctx.sleep("long", "90m")

    wf.drain()
    for _ in range(2):
        workflow_clock.advance("1h")
        wf.drain()
    assert len(started("slow-allow")) == 2


def test_overlap_cancel_previous_cancels_the_running_one(define, workflow_clock):
    @define(
        "slow-cancel", schedules=[Schedule("slow-cancel", every="1h", overlap="cancel-previous")]
    )
    def slow(ctx, input):
        ctx.sleep("long", "90m")

    wf.drain()
    for _ in range(2):
        workflow_clock.advance("1h")
        wf.drain()
    first, second = started("slow-cancel")
    assert wf.get_status(first).status == "cancelled"
    assert "slow-cancel@2026-01-01T02:00:00.000Z" in wf.get_status(first).error["message"]
    assert wf.get_status(second).status == "suspended"


def test_overlap_buffer_one_starts_it_once_the_running_one_ends(define, workflow_clock, events):
    @define("slow-buffer", schedules=[Schedule("slow-buffer", every="1h", overlap="buffer-one")])
    def slow(ctx, input):
        ctx.sleep("long", "150m")

    wf.drain()
    for _ in range(3):  # 01:00 starts; 02:00 is buffered; 03:00 replaces it in the buffer
        workflow_clock.advance("1h")
        wf.drain()
    assert started("slow-buffer") == ["slow-buffer@2026-01-01T01:00:00.000Z"]
    assert [e.data["from"] for e in events if e.type == "schedule-skipped"] == [
        at("2026-01-01T02:00")
    ]
    workflow_clock.advance("30m")  # 03:30: the 01:00 one ends, the buffered 03:00 starts at once
    wf.drain()
    assert started("slow-buffer") == [
        "slow-buffer@2026-01-01T01:00:00.000Z",
        "slow-buffer@2026-01-01T03:00:00.000Z",
    ]


def test_limit_start_at_and_end_at_bound_a_schedule(define, workflow_clock):
    @define(
        "bounded",
        schedules=[
            Schedule("limited", every="1h", limit=2, overlap="allow"),
            Schedule(
                "windowed",
                every="1h",
                overlap="allow",
                start_at=at("2026-01-01T02:00"),
                end_at=at("2026-01-01T03:00"),
            ),
        ],
    )
    def bounded(ctx, input):
        return None

    wf.drain()
    for _ in range(5):
        workflow_clock.advance("1h")
        wf.drain()
    assert started("limited") == [
        "limited@2026-01-01T01:00:00.000Z",
        "limited@2026-01-01T02:00:00.000Z",
    ]
    assert started("windowed") == [
        "windowed@2026-01-01T02:00:00.000Z",
        "windowed@2026-01-01T03:00:00.000Z",
    ]
    assert schedules.get("limited").next_at is None and schedules.get("limited").runs == 2
    assert WorkflowSchedule.objects.get(pk="limited").wake_at is None


def test_many_workers_start_each_occurrence_once(define, workflow_clock):
    @define("once-each", schedules=[Schedule("once-each", every="1h", overlap="allow")])
    def once_each(ctx, input):
        return None

    from django_workflows.worker import Worker

    workers = [Worker(id=f"w{i}") for i in range(3)]
    for worker in workers:
        worker.scheduler.tick()
    workflow_clock.advance("1h")
    for worker in workers:
        worker.scheduler.tick()
    assert started("once-each") == ["once-each@2026-01-01T01:00:00.000Z"]


# -- the declared-schedule lifecycle --------------------------------------------------------------


def test_a_schedule_a_deploy_drops_goes_five_minutes_after_the_last_confirmation(
    define, workflow_clock
):
    definition = None

    @define("dropped", schedules=[Schedule("dropped", cron="0 0 * * *")])
    def dropped(ctx, input):
        return None

    definition = dropped
    sync_declared("default")
    assert WorkflowSchedule.objects.filter(pk="dropped").exists()
    registry.unregister(definition)  # the new code no longer declares it
    workflow_clock.advance("4m")
    sync_declared("default")
    assert WorkflowSchedule.objects.filter(pk="dropped").exists()  # still confirmed recently
    workflow_clock.advance("1m")
    sync_declared("default")
    assert not WorkflowSchedule.objects.filter(pk="dropped").exists()
    registry.register(definition)  # for the fixture's clean-up


def test_an_old_process_leaves_a_newer_versions_declaration_alone(define, workflow_clock):
    @define("report", version=1, schedules=[Schedule("report", cron="0 1 * * *")])
    def report_v1(ctx, input):
        return None

    registry.unregister(report_v1)

    @define("report", version=2, schedules=[Schedule("report", cron="0 5 * * *")])
    def report_v2(ctx, input):
        return None

    sync_declared("default")  # the new code saves its declaration
    registry.unregister(report_v2)
    registry.register(report_v1)  # an old process restarts mid-deploy
    workflow_clock.advance("2m")
    sync_declared("default")
    assert schedules.get("report").cron == "0 5 * * *"
    workflow_clock.advance("5m")  # the new code stopped confirming it: the old one takes over
    sync_declared("default")
    assert schedules.get("report").cron == "0 1 * * *"
    registry.register(report_v2)


def test_a_new_version_replaces_the_declaration_of_an_older_one(define, workflow_clock):
    @define("digest", version=1, schedules=[Schedule("digest", cron="0 1 * * *")])
    def digest_v1(ctx, input):
        return None

    sync_declared("default")
    registry.unregister(digest_v1)

    @define("digest", version=2, schedules=[Schedule("digest", cron="0 6 * * *")])
    def digest_v2(ctx, input):
        return None

    sync_declared("default")
    status = schedules.get("digest")
    assert (status.cron, status.version) == ("0 6 * * *", 2)
    registry.register(digest_v1)


# -- schedules saved at runtime ---------------------------------------------------------------------


@pytest.fixture
def reminder(define):
    @define("reorder-reminder")
    def remind(ctx, input):
        return {"reminded": input["user_id"], "at": ctx.schedule.at.isoformat()}

    return remind


def test_upsert_runs_a_schedule_per_customer_in_their_time_zone(reminder, workflow_clock):
    saved = schedules.upsert(
        "reorder-reminder-u42",
        workflow="reorder-reminder",
        rrule="FREQ=WEEKLY;INTERVAL=4;BYDAY=SA;BYHOUR=9;BYMINUTE=0",
        tz="Europe/Paris",
        input={"user_id": "u42"},
    )
    assert saved.declared is False and saved.input == {"user_id": "u42"}
    assert saved.next_at == at("2026-01-03T08:00")  # the first Saturday, 09:00 in Paris
    assert schedules.preview("reorder-reminder-u42", count=2) == [
        at("2026-01-03T08:00"),
        at("2026-01-31T08:00"),
    ]
    workflow_clock.set(at("2026-01-03T08:00"))
    wf.drain()
    [id] = started("reorder-reminder-u42")
    assert wf.get_status(id).output == {"reminded": "u42", "at": "2026-01-03T08:00:00+00:00"}


def test_upsert_again_keeps_an_rrules_weeks_in_step(reminder, workflow_clock):
    # "Every 4 weeks" counts from the first save: saving the customer's new input two weeks on
    # must not move their Saturdays two weeks (an rrule without start_at counts from its save).
    every_4_weeks = "FREQ=WEEKLY;INTERVAL=4;BYDAY=SA;BYHOUR=9;BYMINUTE=0"
    schedules.upsert("rr", workflow="reorder-reminder", rrule=every_4_weeks, input={"user_id": "a"})
    workflow_clock.set(at("2026-01-14T12:00"))
    saved = schedules.upsert(
        "rr", workflow="reorder-reminder", rrule=every_4_weeks, input={"user_id": "b"}
    )
    assert saved.next_at == at("2026-01-31T09:00")
    # A changed rule, or time zone, counts from its own save.
    saved = schedules.upsert(
        "rr", workflow="reorder-reminder", rrule=every_4_weeks, tz="Europe/Paris", input={}
    )
    assert saved.next_at == at("2026-01-17T08:00")


def test_upsert_replaces_and_remove_deletes_leaving_instances_running(reminder, workflow_clock):
    schedules.upsert("r1", workflow="reorder-reminder", every="1h", input={"user_id": "a"})
    schedules.upsert("r1", workflow="reorder-reminder", every="2h", input={"user_id": "b"})
    status = schedules.get("r1")
    assert status.every == timedelta(hours=2) and status.input == {"user_id": "b"}
    workflow_clock.advance("2h")
    wf.drain()
    assert len(started("r1")) == 1
    assert schedules.remove("r1") is True
    assert schedules.get("r1") is None
    assert len(started("r1")) == 1
    with pytest.raises(wf.WorkflowNotFoundError):
        schedules.remove("r1")


def test_a_pinned_version_runs_only_where_that_version_is_registered(define, workflow_clock):
    @define("pinned", version=1)
    def pinned_v1(ctx, input):
        return "v1"

    @define("pinned", version=2)
    def pinned_v2(ctx, input):
        return "v2"

    schedules.upsert("pin", workflow="pinned", version=1, every="1h", overlap="allow")
    workflow_clock.advance("1h")
    wf.drain()
    [first] = started("pin")
    assert wf.get_status(first).output == "v1"
    registry.unregister(pinned_v1)  # a process of newer code only
    workflow_clock.advance("1h")
    wf.drain()
    assert started("pin") == [first]  # left to a process that registers version 1
    registry.register(pinned_v1)
    workflow_clock.advance("1m")
    wf.drain()
    assert started("pin") == [first, "pin@2026-01-01T02:00:00.000Z"]


def test_pause_stops_occurrences_and_resume_starts_from_the_next_one(reminder, workflow_clock):
    schedules.upsert("paused", workflow="reorder-reminder", every="1h", input={"user_id": "p"})
    assert schedules.pause("paused").paused is True
    workflow_clock.advance("3h")
    wf.drain()
    assert started("paused") == []
    assert schedules.get("paused").next_at is None
    resumed = schedules.resume("paused")
    assert resumed.next_at == at("2026-01-01T04:00")  # the first after now, none of the passed
    workflow_clock.advance("1h")
    wf.drain()
    assert started("paused") == ["paused@2026-01-01T04:00:00.000Z"]


def test_trigger_starts_an_occurrence_now_even_while_paused(reminder, workflow_clock):
    schedules.upsert("trig", workflow="reorder-reminder", every="1d", input={"user_id": "t"})
    schedules.pause("trig")
    workflow_clock.advance("90s")
    result = schedules.trigger("trig")
    assert result.id == "trig@2026-01-01T00:01:30.000Z" and result.workflow == "reorder-reminder"
    wf.drain()
    assert wf.get_status(result.id).output["reminded"] == "t"


def test_unknown_schedules_and_bad_options_are_refused_before_anything_is_written(reminder):
    with pytest.raises(wf.WorkflowNotFoundError):
        schedules.pause("nope")
    with pytest.raises(wf.WorkflowNotFoundError):
        schedules.trigger("nope")
    assert schedules.get("nope") is None
    with pytest.raises(wf.WorkflowNotFoundError):
        schedules.upsert("x", workflow="no-such-workflow", every="1h")
    with pytest.raises(ValueError, match="Schedule id"):
        schedules.upsert("has space", workflow="reorder-reminder", every="1h")
    with pytest.raises(ValueError, match="overlap"):
        schedules.upsert("x", workflow="reorder-reminder", every="1h", overlap="sometimes")
    with pytest.raises(ValueError):
        schedules.upsert("x", workflow="reorder-reminder", cron="61 * * * *")
    with pytest.raises(ValueError):
        schedules.upsert("x", workflow="reorder-reminder")  # no timing
    with pytest.raises(TypeError):
        schedules.upsert("x", workflow="reorder-reminder", every="1h", input={"a": {1, 2}})
    assert not WorkflowSchedule.objects.exists()


def test_preview_of_a_timing_that_is_not_saved():
    assert schedules.preview({"cron": "0 6 * * 1"}, start=START, count=2) == [
        at("2026-01-05T06:00"),
        at("2026-01-12T06:00"),
    ]
    assert schedules.preview(Schedule("p", every="15m"), start=START, count=2) == [
        at("2026-01-01T00:15"),
        at("2026-01-01T00:30"),
    ]


def test_a_schedules_input_is_encrypted_with_a_codec(reminder, settings, workflow_clock):
    import base64

    from django_workflows.codecs import AesGcmPayloadCodec

    key = base64.b64encode(b"k" * 32).decode()
    settings.DJANGO_WORKFLOWS = {"CODEC": AesGcmPayloadCodec(keys={"k1": key})}
    schedules.upsert("secret", workflow="reorder-reminder", every="1h", input={"user_id": "s3"})
    assert WorkflowSchedule.objects.get(pk="secret").input.startswith("$wf1:aes-256-gcm:k1.")
    assert schedules.get("secret").input == {"user_id": "s3"}
    workflow_clock.advance("1h")
    wf.drain()
    [id] = started("secret")
    assert wf.get_status(id).output["reminded"] == "s3"


def test_the_system_check_reports_one_schedule_id_declared_by_two_workflows(define):
    from django.core.checks import run_checks

    @define("one", schedules=[Schedule("shared-id", every="1h")])
    def one(ctx, input):
        return None

    @define("two", schedules=[Schedule("shared-id", every="1h")])
    def two(ctx, input):
        return None

    assert "django_workflows.E007" in [m.id for m in run_checks()]


@pytest.mark.django_db(transaction=True)
def test_a_real_clock_worker_thread_starts_an_every_second_schedule(define):
    @define("tick", schedules=[Schedule("tick", every="1s", overlap="allow")])
    def tick(ctx, input):
        return ctx.schedule.at.isoformat()

    with worker_thread(poll_interval="200ms"):
        wait_until(lambda: len(started("tick")) >= 2, 10)
    ids = started("tick")
    assert len(ids) >= 2, ids
    assert all(id.startswith("tick@") and id.endswith(".000Z") for id in ids)


def test_use_clock_is_what_the_scheduler_reads():
    clock = ManualClock(START)
    with use_clock(clock):
        assert schedules.preview({"every": "1h"}, count=1) == [at("2026-01-01T01:00")]
