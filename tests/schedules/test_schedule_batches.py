"""A tick writes a batch of schedules' occurrences together (issue 15, "Schedules at scale"): what
it writes for each is what start() writes, and an occurrence whose id is taken is told apart as
before, in the batch of the others.

The manual clock starts on 1 January 2026; `every="1m"` counts from the epoch.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

import django_workflows as wf
from django_workflows import clock, schedules
from django_workflows.models import (
    InstanceTag,
    JournalEntry,
    Status,
    WorkflowInstance,
    WorkflowSchedule,
)
from django_workflows.schedules.ids import occurrence_id
from django_workflows.store import payloads
from django_workflows.store.claims import last_signal_id
from django_workflows.worker import Worker

pytestmark = pytest.mark.django_db

COUNT = 12


class Traced:
    """A STEP_MIDDLEWARE handler whose process_start() gives each start a header."""

    def __init__(self, call_next):
        self.call_next = call_next

    def __call__(self, invocation):
        return self.call_next(invocation)

    def process_start(self, invocation):
        return {"trace": f"t-{invocation.instance_id}"}


def written(id: str) -> dict:
    """What a start wrote for instance `id`, beyond what differs by id or time."""
    row = payloads.decode_instance(WorkflowInstance.objects.get(pk=id))
    entries = {
        name: payloads.decode_document(id, name, document)
        for name, document in JournalEntry.objects.filter(instance_id=id).values_list(
            "name", "document"
        )
    }
    return {
        "status": row.status,
        "workflow": row.workflow,
        "version": row.version,
        "input": row.input,
        "priority": row.priority,
        "queue": row.queue,
        "has_headers": row.has_headers,
        "signal_cursor": row.signal_cursor,
        "tags": sorted(InstanceTag.objects.filter(instance_id=id).values_list("tag", flat=True)),
        "entries": {
            # process_start() was given this instance's id
            name: {**document, "headers": document["headers"] == {"trace": f"t-{id}"}}
            for name, document in entries.items()
        },
    }


def test_a_batch_writes_for_each_occurrence_what_start_writes(define, workflow_clock, settings):
    settings.DJANGO_WORKFLOWS = {
        **(getattr(settings, "DJANGO_WORKFLOWS", None) or {}),
        "STEP_MIDDLEWARE": [f"{__name__}.Traced"],
    }

    @define("batched", tags=["nightly"])
    def batched(ctx, input):
        return input

    for index in range(COUNT):
        schedules.upsert(
            f"batched-{index:02d}", workflow="batched", every="1m", input={"n": 1}, priority=3
        )
    wf.signal("anything", "arrived", key="k")  # a signal sent before: not the instances'
    workflow_clock.advance("1m")
    assert Worker(id="batches").scheduler.tick() == COUNT
    started = WorkflowInstance.objects.filter(schedule_id__startswith="batched-")
    assert started.count() == COUNT
    by_start = wf.start("batched", {"n": 1}, id="by-hand", priority=3)
    expected = written(by_start.id)
    assert expected["signal_cursor"] == last_signal_id("default") > 0
    assert expected["tags"] == ["nightly"] and expected["has_headers"]
    for id in started.values_list("id", flat=True):
        assert written(id) == expected, id


def test_a_batch_tells_a_taken_id_from_its_own_instance(define, workflow_clock, caplog):
    @define("batched")
    def batched(ctx, input):
        return input

    for index in range(COUNT):
        schedules.upsert(f"batched-{index:02d}", workflow="batched", every="1m", input=index)
    workflow_clock.advance("1m")
    now = clock.now()
    taken = occurrence_id("batched-03", now)
    WorkflowInstance.objects.create(  # as older code let start() take an occurrence's id
        id=taken,
        workflow="batched",
        version=1,
        status=Status.SUSPENDED,
        input=3,
        created_at=now,
        updated_at=now,
    )
    own = schedules.trigger("batched-07")  # started, but the schedule's state not written
    assert own.created and own.id == occurrence_id("batched-07", now)
    with caplog.at_level(logging.ERROR, logger="django_workflows"):
        assert Worker(id="batches").scheduler.tick() == COUNT
    assert any(taken in record.getMessage() for record in caplog.records)
    assert WorkflowInstance.objects.get(pk=taken).schedule_id is None  # left as it was
    started = WorkflowInstance.objects.filter(schedule_id__startswith="batched-")
    assert sorted(started.values_list("id", flat=True)) == sorted(
        occurrence_id(f"batched-{index:02d}", now) for index in range(COUNT) if index != 3
    )
    runs = {id: schedules.get(id).runs for id in (f"batched-{i:02d}" for i in range(COUNT))}
    assert runs == {id: 0 if id == "batched-03" else 1 for id in runs}
    assert set(WorkflowSchedule.objects.values_list("wake_at", "lease_token")) == {
        (now + timedelta(minutes=1), None)
    }
