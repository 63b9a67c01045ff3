"""Many schedules due at once (issue 15, "Schedules at scale"): a worker's tick starts every
occurrence the clock passed, not a fixed number of schedules per poll interval.

The manual clock starts on 1 January 2026.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from django_workflows import schedules
from django_workflows.models import WorkflowInstance, WorkflowSchedule
from django_workflows.worker import Worker

pytestmark = pytest.mark.django_db

COUNT = 150  # more than one claim's batch of schedules


@pytest.fixture
def per_minute(define, workflow_clock):
    @define("per-minute")
    def per_minute(ctx, input):
        return input

    for index in range(COUNT):
        schedules.upsert(f"per-minute-{index:03d}", workflow="per-minute", every="1m", input=index)
    return per_minute


def test_one_tick_starts_every_due_occurrence_of_many_schedules(per_minute, workflow_clock):
    worker = Worker(id="scale")
    workflow_clock.advance("1m")
    assert worker.scheduler.tick() == COUNT
    rows = WorkflowInstance.objects.filter(schedule_id__startswith="per-minute-")
    assert rows.count() == COUNT
    assert set(rows.values_list("scheduled_at", flat=True)) == {workflow_clock.now()}
    # Each handed back, its next occurrence a minute on, and its lease cleared.
    assert set(WorkflowSchedule.objects.values_list("wake_at", "lease_token")) == {
        (workflow_clock.now() + timedelta(minutes=1), None)
    }


def test_overlap_skip_sees_the_batchs_running_instances(per_minute, workflow_clock, events):
    worker = Worker(id="scale")
    workflow_clock.advance("1m")
    worker.scheduler.tick()
    workflow_clock.advance("1m")  # nothing ran: every first occurrence is still pending
    assert worker.scheduler.tick() == COUNT
    assert WorkflowInstance.objects.filter(schedule_id__startswith="per-minute-").count() == COUNT
    skipped = [e for e in events if e.type == "schedule-skipped"]
    assert len(skipped) == COUNT and {e.data["reason"] for e in skipped} == {"overlap"}
