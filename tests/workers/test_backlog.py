"""Each queue's backlog (due now, not held by a worker) and its alert state: due instances that
no live worker claims, by the registry's rows and the workers' queues and workflows."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows.models import Status, WorkflowInstance
from django_workflows.store import instances as store
from django_workflows.store import workers as registry
from django_workflows.worker.health import health
from tests.workers.helpers import register

pytestmark = pytest.mark.django_db


def test_nothing_due_and_no_worker_is_no_alert(workflow_clock):
    state = health()
    assert state.workers == [] and state.queues == [] and state.alerts == []


def test_the_backlog_counts_due_instances_by_queue_with_the_oldest_due_time(workflow_clock):
    first = workflow_clock.now()
    wf.start("ops-quick", {}, id="a-1")
    workflow_clock.advance("5s")
    wf.start("ops-quick", {}, id="a-2")
    wf.start("ops-quick", {}, id="g-1", queue="gpu")
    state = health()
    by_queue = {queue.queue: queue for queue in state.queues}
    assert sorted(by_queue) == ["default", "gpu"]
    assert by_queue["default"].due == 2 and by_queue["default"].oldest_due_at == first
    assert by_queue["gpu"].due == 1
    assert by_queue["gpu"].oldest_due_at == first + timedelta(seconds=5)
    # No worker at all: every queue with a backlog is in the alert state.
    assert [queue.queue for queue in state.alerts] == ["default", "gpu"]
    assert by_queue["default"].unserved == 2


def test_leased_finished_and_later_instances_are_not_backlog(workflow_clock):
    wf.start("ops-quick", {}, id="done")
    wf.drain()  # completed: not due
    wf.start("ops-timed-sleep", {}, id="asleep")
    wf.drain()  # asleep: due later
    wf.start("ops-quick", {}, id="held")
    now = workflow_clock.now()
    claim = store.claim(
        connection.alias,
        owner="w",
        token="t",
        now=now,
        lease_until=now + timedelta(seconds=30),
        limit=5,
        workflows=[("ops-quick", 1)],
    )
    assert [instance.id for instance in claim.instances] == ["held"]
    assert health().queues == []
    # Once its lease lapses (its worker died), it is due again, as a claim would take it.
    workflow_clock.advance("31s")
    [queue] = health().queues
    assert queue.due == 1 and queue.alert


def test_a_live_worker_of_the_queue_clears_the_alert_and_a_gone_one_does_not(workflow_clock):
    wf.start("ops-quick", {}, id="a-1")
    wf.start("ops-quick", {}, id="g-1", queue="gpu")
    register("cpu-worker", queues=["default"], heartbeat=1.0)
    state = health()
    assert [queue.queue for queue in state.alerts] == ["gpu"]
    by_queue = {queue.queue: queue for queue in state.queues}
    assert by_queue["default"].workers == ["cpu-worker"] and not by_queue["default"].alert
    assert by_queue["gpu"].workers == [] and by_queue["gpu"].unserved == 1
    # Three heartbeats later without a refresh, the worker is gone: no longer serving.
    workflow_clock.advance("3s")
    state = health()
    assert [worker.live for worker in state.workers] == [False]
    assert [queue.queue for queue in state.alerts] == ["default", "gpu"]


def test_a_worker_of_every_queue_serves_them_all(workflow_clock):
    wf.start("ops-quick", {}, id="a-1")
    wf.start("ops-quick", {}, id="g-1", queue="gpu")
    register("any-worker", queues=[])
    state = health()
    assert state.alerts == []
    assert all(queue.workers == ["any-worker"] for queue in state.queues)


def test_a_worker_of_other_workflows_does_not_serve_a_queue(workflow_clock):
    wf.start("ops-quick", {}, id="q-1", queue="gpu")
    wf.start("flaky", {}, id="f-1", queue="gpu")
    register("flaky-worker", queues=["gpu"], workflows=["flaky@1"])
    [queue] = health().queues
    assert queue.due == 2 and queue.workers == ["flaky-worker"]
    assert queue.unserved == 1 and queue.alert  # nobody claims the ops-quick instance
    register("quick-worker", queues=["gpu"], workflows=["ops-quick@1"])
    [queue] = health().queues
    assert queue.workers == ["flaky-worker", "quick-worker"] and not queue.alert


def test_the_live_workers_come_first(workflow_clock):
    register("old", heartbeat=1.0)
    workflow_clock.advance("10s")
    register("slow-but-live", heartbeat=60.0, seen=workflow_clock.now() - timedelta(seconds=9))
    register("fresh", heartbeat=1.0)
    workers = health().workers
    assert [(w.id, w.live) for w in workers] == [
        ("slow-but-live", True),
        ("fresh", True),
        ("old", False),
    ]


def test_the_backlog_counts_every_priority_parked_and_lapsed_lease_as_a_scan_would(
    workflow_clock,
):
    # Where the claim index is not partial, the backend reads the due rows as ranges of it,
    # priority by priority: the counts must be those of every instance, checked one by one.
    now = workflow_clock.now()
    for n in range(12):
        wf.start("ops-quick", {}, id=f"p-{n}", priority=[1, 3, 9][n % 3])
    wf.start("flaky", {}, id="f-1", queue="gpu", priority=7)
    rows = WorkflowInstance.objects
    rows.filter(id="p-1").update(parked=True)
    rows.filter(id="p-2").update(lease_until=now - timedelta(seconds=1))  # lapsed
    rows.filter(id="p-3").update(lease_until=now + timedelta(seconds=30))  # held
    rows.filter(id="p-4").update(wake_at=now + timedelta(seconds=5))  # later
    rows.filter(id="p-5").update(wake_at=now - timedelta(hours=1))  # the oldest
    rows.filter(id="p-6").update(wake_at=None, status=Status.SUSPENDED)  # waits, no wake time
    expected: dict[tuple[str, str, int], list] = {}
    for row in rows.all():
        due = row.wake_at is not None and row.wake_at <= now
        free = row.lease_until is None or row.lease_until < now
        if due and free:
            expected.setdefault((row.queue, row.workflow, row.version), []).append(row.wake_at)
    found = registry.backlog(connection.alias, now=now, queues=["default", "gpu"])
    assert [(d.queue, d.workflow, d.version, d.count, d.oldest) for d in found] == [
        (*key, len(wakes), min(wakes)) for key, wakes in sorted(expected.items())
    ]
    assert sum(d.count for d in found) == 10  # 13 unfinished, less the held, later and waiting
    assert found[0].oldest == now - timedelta(hours=1)
    assert registry.backlog(connection.alias, now=now, queues=["gpu"]) == found[1:]
    assert registry.queue_backlog(connection.alias, now=now) == [
        registry.QueueDue("default", 9, now - timedelta(hours=1)),
        registry.QueueDue("gpu", 1, found[1].oldest),
    ]


def test_an_instance_that_ends_in_any_way_keeps_no_wake_time(workflow_clock):
    # The backlog does not read the status: a claim takes any due instance, so none that has
    # ended may keep a wake time, whichever way it ended.
    wf.start("ops-quick", {}, id="completed")
    wf.start("ops-undo", {"fail": True}, id="failed")
    wf.start("ops-timed-sleep", {}, id="timed-out")
    wf.start("ops-timed-wait", {}, id="cancelled")
    wf.start("ops-timed-wait", {}, id="terminated")
    wf.drain()
    wf.start("ops-quick", {}, id="never-ran")
    wf.cancel("cancelled")
    wf.terminate("terminated")
    wf.terminate("never-ran")
    workflow_clock.advance("1h")
    wf.drain()
    rows = WorkflowInstance.objects.order_by("id")
    assert [(row.id, row.status, row.wake_at) for row in rows] == [
        ("cancelled", Status.CANCELLED, None),
        ("completed", Status.COMPLETED, None),
        ("failed", Status.FAILED, None),
        ("never-ran", Status.CANCELLED, None),
        ("terminated", Status.CANCELLED, None),
        ("timed-out", Status.FAILED, None),
    ]
    assert registry.queue_backlog(connection.alias, now=workflow_clock.now()) == []
