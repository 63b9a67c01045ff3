"""The timeline's geometry, on journals written by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django_workflows.admin import build_timeline
from django_workflows.models import WorkflowInstance

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(hours: float) -> str:
    return (T0 + timedelta(hours=hours)).isoformat()


def instance(status: str, updated_hours: float) -> WorkflowInstance:
    return WorkflowInstance(
        id="i", workflow="w", version=1, status=status, created_at=T0,
        updated_at=T0 + timedelta(hours=updated_hours),
    )  # fmt: skip


def test_a_pending_sleep_reaches_its_wake_time_and_now_is_marked(workflow_clock):
    workflow_clock.set(T0 + timedelta(hours=25))
    timeline = build_timeline(
        instance("suspended", 24),
        [
            ("charge", {"kind": "step", "status": "completed", "attempt": 1,
                        "started_at": at(0), "finished_at": at(0)}),
            ("$now:0", {"kind": "value", "status": "completed", "finished_at": at(1)}),
            ("nap", {"kind": "sleep", "status": "pending", "started_at": at(24),
                     "wake_at": at(100)}),
        ],
    )  # fmt: skip
    charge, value, nap = timeline.rows
    assert (timeline.start, timeline.end) == (T0, T0 + timedelta(hours=100))
    assert charge.width == 0.6 and not charge.marker
    assert value.marker and value.left == 1.0
    assert (nap.left, nap.width) == (24.0, 76.0)
    assert timeline.now == 25.0


def test_a_finished_instance_closes_open_entries_at_its_end_and_has_no_now():
    timeline = build_timeline(
        instance("cancelled", 10),
        [("wait", {"kind": "wait", "status": "cancelled", "started_at": at(5),
                   "deadlines": {"t": at(50)}})],
    )  # fmt: skip
    [wait] = timeline.rows
    assert (wait.left, wait.width) == (50.0, 50.0)
    assert timeline.now is None
    assert wait.detail_place == ("dw-detail-before", "right: 50.000%")


def test_an_entry_without_any_time_is_listed_without_a_mark():
    timeline = build_timeline(instance("completed", 1), [("x", {"kind": "value"})])
    [row] = timeline.rows
    assert row.marker and row.start is None


def test_a_short_run_labels_its_axis_relative_to_its_start():
    ms = 1 / 3_600_000  # an hour's fraction per millisecond
    timeline = build_timeline(
        instance("completed", 1200 * ms),
        [("charge", {"kind": "step", "status": "completed", "attempt": 1,
                     "started_at": at(0), "finished_at": at(1200 * ms)})],
    )  # fmt: skip
    assert [text for _, text in timeline.ticks] == [
        "+0 ms",
        "+240 ms",
        "+480 ms",
        "+720 ms",
        "+960 ms",
        "+1.2 s",
    ]
    assert timeline.origin == "from 00:00:00 UTC"


def test_a_run_of_hours_labels_its_axis_with_clock_times():
    timeline = build_timeline(instance("completed", 5), [])
    assert [text for _, text in timeline.ticks] == [
        "00:00:00",
        "01:00:00",
        "02:00:00",
        "03:00:00",
        "04:00:00",
        "05:00:00",
    ]
    assert timeline.origin == "times in UTC"


def test_a_compensation_reads_as_the_undo_of_its_step():
    timeline = build_timeline(
        instance("cancelled", 1),
        [("$compensate:reserve-stock", {"kind": "compensation", "status": "completed",
                                        "started_at": at(0.5), "finished_at": at(0.6)})],
    )  # fmt: skip
    [row] = timeline.rows
    assert row.name == "undo reserve-stock"
    assert row.entry == "$compensate:reserve-stock"  # the stored name, unchanged
