"""Real workers on threads of their own, each serving its queues: each runs only its queues'
instances, leaves the others' due instances alone, keeps the priority order within a queue,
and a concurrency limit shared by instances of two queues holds across both workers."""

from __future__ import annotations

import threading
import time

import pytest

import django_workflows as wf
from django_workflows import Concurrency
from django_workflows.models import WorkflowInstance
from tests.helpers import wait_until, worker_thread

pytestmark = pytest.mark.django_db(transaction=True)


def done(*ids: str) -> bool:
    return all(wf.get_status(id).status == "completed" for id in ids)


def test_two_workers_on_two_queues_each_run_only_their_queues_instances(define):
    @define("pooled")
    def pooled(ctx, input):
        return ctx.step("work", lambda step: input["n"])

    gpu = [f"gpu-{n}" for n in range(6)]
    slow = [f"slow-{n}" for n in range(6)]
    for n in range(6):
        wf.start("pooled", {"n": n}, id=gpu[n], queue="gpu")
        wf.start("pooled", {"n": n}, id=slow[n], queue="slow-api")
    with (
        worker_thread(id="gpu-box", queues=["gpu"], concurrency=3, poll_interval="50ms"),
        worker_thread(id="slow-pool", queues=["slow-api"], concurrency=3, poll_interval="50ms"),
    ):
        assert wait_until(lambda: done(*gpu, *slow), 60)
    owners = dict(WorkflowInstance.objects.values_list("id", "lease_owner"))
    assert {owners[id] for id in gpu} == {"gpu-box"}
    assert {owners[id] for id in slow} == {"slow-pool"}


def test_a_one_queue_worker_leaves_the_other_queues_due_instances_alone(define):
    @define("alone")
    def alone(ctx, input):
        return input

    wf.start("alone", 1, id="slow-first", queue="slow-api")
    with worker_thread(id="gpu-only", queues=["gpu"], poll_interval="50ms"):
        wf.start("alone", 2, id="gpu-after", queue="gpu")
        # The worker claimed since the slow instance was due: it passed over it.
        assert wait_until(lambda: done("gpu-after"), 30)
        wf.start("alone", 3, id="gpu-later", queue="gpu")
        assert wait_until(lambda: done("gpu-later"), 30)
    row = WorkflowInstance.objects.get(pk="slow-first")
    assert (row.status, row.runs, row.lease_owner, row.lease_token) == ("pending", 0, None, None)
    with worker_thread(id="slow-worker", queues=["slow-api"], poll_interval="50ms"):
        assert wait_until(lambda: done("slow-first"), 30)


def test_priority_order_holds_within_a_queue(define):
    ran: list[str] = []

    @define("prioritised")
    def prioritised(ctx, input):
        ctx.step("record", lambda step: ran.append(ctx.instance_id))

    plan = [("p-none", None), ("p-9", 9), ("p-1", 1), ("p-5", 5), ("p-1b", 1)]
    for id, priority in plan:
        wf.start("prioritised", id=id, queue="gpu", priority=priority)
        wf.start("prioritised", id=f"other-{id}", queue="default", priority=1)
    with worker_thread(queues=["gpu"], concurrency=1, poll_interval="50ms"):
        assert wait_until(lambda: done(*(id for id, _ in plan)), 30)
    assert ran == ["p-none", "p-1", "p-1b", "p-5", "p-9"]
    assert wf.list_instances(queue="default", status="completed") == []


def test_a_concurrency_limit_shared_by_two_queues_holds_across_both_workers(define):
    lock = threading.Lock()
    running = 0
    most = 0

    def work(step):
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.05)  # long enough for the other worker to try to start one meanwhile
        with lock:
            running -= 1

    @define("one-at-a-time", concurrency=Concurrency(limit=1))
    def one_at_a_time(ctx, input):
        ctx.step("work", work)

    ids = []
    for n in range(4):
        for queue in ("gpu", "slow-api"):
            ids.append(f"{queue}-{n}")
            wf.start("one-at-a-time", id=ids[-1], queue=queue)
    with (
        worker_thread(id="gpu-box", queues=["gpu"], concurrency=4, poll_interval="20ms"),
        worker_thread(id="slow-pool", queues=["slow-api"], concurrency=4, poll_interval="20ms"),
    ):
        assert wait_until(lambda: done(*ids), 60)
    assert most == 1
    owners = dict(WorkflowInstance.objects.values_list("id", "lease_owner"))
    assert {owners[id] for id in ids if id.startswith("gpu")} == {"gpu-box"}
    assert {owners[id] for id in ids if id.startswith("slow")} == {"slow-pool"}
