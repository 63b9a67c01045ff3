"""A real database fault in the middle of a schedule tick (issue 15, "Schedules at scale"): the
statement that writes a batch's instances is cancelled, or its connection killed. Every
schedule's occurrence then starts exactly once, in that tick or once the leases expire."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

import django_workflows as wf
from django_workflows import clock, schedules
from django_workflows.engine.registry import registry
from django_workflows.models import WorkflowInstance, WorkflowSchedule
from django_workflows.schedules.declared import declared_in_code
from django_workflows.schedules.ids import occurrence_id
from django_workflows.schedules.runner import Scheduler
from django_workflows.schedules.state import State

from .conftest import interrupt_the_lock_waiter

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("server")]

COUNT = 30  # one claim's batch
LEASE = timedelta(seconds=30)


@pytest.fixture
def hourly():
    @wf.workflow("fault-hourly")
    def hourly(ctx, input):
        return input

    for index in range(COUNT):
        schedules.upsert(
            f"fault-hourly-{index:02d}", workflow="fault-hourly", every="1h", input=index
        )
    yield
    registry.unregister(hourly)


def tick_in_a_thread(
    now, scheduler: Scheduler | None = None
) -> tuple[threading.Thread, list[BaseException]]:
    """A worker's tick at `now` (a new worker's, or `scheduler`'s with the occurrences it
    prepared), on a thread (and connection) of its own; what it raised."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            if scheduler is None:
                Scheduler("default", "fault-worker", ["fault-hourly"], LEASE).run_due(now)
            else:
                scheduler.ahead.write_due(now)
                scheduler.run_due(now)
        except BaseException as error:  # a killed connection may end the tick
            raised.append(error)
        finally:
            connection.close()

    thread = threading.Thread(target=run, name="tick", daemon=True)
    thread.start()
    return thread, raised


@pytest.mark.parametrize("ahead", [False, True], ids=["claimed", "prepared-ahead"])
@pytest.mark.parametrize("fault", ["statement", "connection"])
def test_an_interrupted_tick_starts_each_occurrence_exactly_once(hourly, fault, ahead, caplog):
    [wake_at] = set(WorkflowSchedule.objects.values_list("wake_at", flat=True))
    now = wake_at + timedelta(seconds=1)  # each schedule's first occurrence is due
    prepared = None
    if ahead:  # the occurrences prepared before their time: their write is the one interrupted
        prepared = Scheduler("default", "fault-worker", ["fault-hourly"], LEASE)
        prepared.ahead.prepare(wake_at - timedelta(seconds=5), declared_in_code(["fault-hourly"]))
        assert len(prepared.ahead.prepared) == COUNT
    blocked = occurrence_id("fault-hourly-17", wake_at)
    with transaction.atomic():
        # An uncommitted row with one occurrence's id: the batch's insert waits for this
        # transaction, and the test interrupts it; then the row goes away.
        created = timezone.now()
        WorkflowInstance.objects.create(
            id=blocked, workflow="placeholder", version=1, created_at=created, updated_at=created
        )
        tick, _ = tick_in_a_thread(now, prepared)
        interrupt_the_lock_waiter(fault)
        transaction.set_rollback(True)
    tick.join(60)
    assert not tick.is_alive(), "the tick did not return"
    if ahead:  # it was the prepared write that the fault met, and the tick went on without it
        assert "occurrences prepared ahead failed" in caplog.text
    # Whatever the tick left leased, the next tick after the lease takes up.
    later, _ = tick_in_a_thread(now + LEASE + timedelta(seconds=1))
    later.join(60)
    assert not later.is_alive(), "the later tick did not return"

    started = WorkflowInstance.objects.filter(schedule_id__startswith="fault-hourly-")
    assert sorted(started.values_list("id", flat=True)) == sorted(
        occurrence_id(f"fault-hourly-{index:02d}", wake_at) for index in range(COUNT)
    )
    assert {wf.get_status(id).status for id in started.values_list("id", flat=True)} == {"pending"}
    for schedule in WorkflowSchedule.objects.all():
        assert State.of(schedule).runs == 1, schedule.pk
        assert schedule.lease_token is None
        assert schedule.wake_at == wake_at + timedelta(hours=1)
    assert clock.now() < wake_at + timedelta(hours=1)  # no later occurrence was due
