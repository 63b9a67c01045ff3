"""An occurrence's instance is the schedule's own: an instance that holds its id otherwise (one
started before start() refused such ids) is not taken for it.

Such an instance is written here as a row, as the older code left it.
"""

from __future__ import annotations

import logging

import pytest

import django_workflows as wf
from django_workflows import clock, schedules
from django_workflows.models import Status, WorkflowInstance

pytestmark = pytest.mark.django_db

OCCURRENCE = "hourly@2026-01-01T01:00:00.000Z"


def squatter(id: str, workflow: str = "reorder-reminder") -> None:
    """An instance with an occurrence's id, started by hand with the schedule's input."""
    now = clock.now()
    WorkflowInstance.objects.create(
        id=id,
        workflow=workflow,
        version=1,
        status=Status.SUSPENDED,
        input={"user_id": "h"},
        created_at=now,
        updated_at=now,
    )


@pytest.fixture
def reminder(define):
    @define("reorder-reminder")
    def reminder(ctx, input):
        return {"reminded": input["user_id"]}

    return reminder


def test_an_occurrence_whose_id_another_instance_holds_is_not_counted_as_started(
    reminder, workflow_clock, caplog
):
    schedules.upsert("hourly", workflow="reorder-reminder", every="1h", input={"user_id": "h"})
    squatter(OCCURRENCE)
    workflow_clock.advance("1h")
    with caplog.at_level(logging.ERROR, logger="django_workflows"):
        wf.drain()
    assert schedules.get("hourly").runs == 0
    assert WorkflowInstance.objects.get(pk=OCCURRENCE).schedule_id is None  # left as it was
    assert any(OCCURRENCE in record.getMessage() for record in caplog.records)
    workflow_clock.advance("1h")  # the schedule goes on with its next occurrence
    wf.drain()
    assert schedules.get("hourly").runs == 1
    assert (
        WorkflowInstance.objects.get(pk="hourly@2026-01-01T02:00:00.000Z").schedule_id == "hourly"
    )


def test_trigger_refuses_an_occurrence_whose_id_another_instance_holds(reminder, workflow_clock):
    schedules.upsert("hourly", workflow="reorder-reminder", every="1h", input={"user_id": "h"})
    workflow_clock.advance("1h")
    squatter(OCCURRENCE)
    with pytest.raises(wf.WorkflowIdConflictError, match="hourly"):
        schedules.trigger("hourly")
    assert WorkflowInstance.objects.get(pk=OCCURRENCE).schedule_id is None


def test_an_occurrence_started_before_is_still_found_by_its_repeat(reminder, workflow_clock):
    """The schedule's own instance, found again (a crash repeated the start), is no conflict."""
    schedules.upsert("hourly", workflow="reorder-reminder", every="1h", input={"user_id": "h"})
    workflow_clock.advance("1h")
    first = schedules.trigger("hourly")
    again = schedules.trigger("hourly")
    assert (first.id, first.created, again.id, again.created) == (
        OCCURRENCE,
        True,
        OCCURRENCE,
        False,
    )


@pytest.mark.parametrize("id", ["hourly\n", "hourly ", "hour ly", "hourly@1"])
def test_a_schedule_id_with_a_character_an_occurrence_id_cannot_hold_is_refused(reminder, id):
    with pytest.raises(ValueError, match="Schedule id"):
        schedules.upsert(id, workflow="reorder-reminder", every="1h")
    assert schedules.get(id) is None
