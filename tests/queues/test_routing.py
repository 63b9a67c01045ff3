"""A worker of some queues claims only their instances, on every claim path: the one-statement
claim (PostgreSQL), the hand-written one (MySQL, MariaDB), SQLite's, and the claims under
concurrency and rate limits; in claim order across its queues. `runworkflows --queue`."""

from __future__ import annotations

import io
import logging
import uuid

import pytest
from django.core.management import call_command

import django_workflows as wf
from django_workflows import Concurrency, RateLimit, Schedule, clock
from django_workflows.durations import parse_duration
from django_workflows.engine.registry import registry
from django_workflows.models import Status, WorkflowInstance
from django_workflows.store import instances as store
from django_workflows.worker.worker import Worker, limit_rules

pytestmark = pytest.mark.django_db(transaction=True)


def claim(names: list[str], queues: list[str] | None, *, limit: int = 10) -> list[str]:
    """One claim as a worker of `queues` makes it, with the registered code's limits: the ids
    it leased, in claim order."""
    concurrency, rates = limit_rules(names)
    now = clock.now()
    claimed = store.claim(
        "default",
        owner="test",
        token=uuid.uuid4().hex,
        now=now,
        lease_until=now + parse_duration("30s", "lease"),
        limit=limit,
        workflows=registry.pairs(names),
        concurrency=concurrency,
        rates=rates,
        queues=queues,
    )
    return [i.id for i in claimed.instances]


@pytest.fixture
def routed(define):
    """A workflow whose runs are recorded, with instances in three queues."""
    ran: list[str] = []

    @define("routed")
    def routed(ctx, input):
        ran.append(ctx.instance_id)
        return ctx.instance_id

    return ran


def test_a_worker_of_one_queue_runs_only_that_queues_instances(routed, workflow_clock):
    for queue in ("gpu", "default", "slow-api", "gpu"):
        wf.start("routed", id=f"{queue}-{len(wf.list_instances())}", queue=queue)
    assert Worker(queues=["gpu"]).drain() == 2
    assert sorted(routed) == ["gpu-0", "gpu-3"]
    pending = {s.id for s in wf.list_instances(status="pending")}
    assert pending == {"default-1", "slow-api-2"}
    # Their wake times and leases are as they were: nothing touched them.
    for row in WorkflowInstance.objects.filter(pk__in=pending):
        assert row.lease_owner is None and row.runs == 0 and row.wake_at is not None


def test_a_worker_of_every_queue_runs_them_all(routed, workflow_clock):
    for n, queue in enumerate(("gpu", "default", "slow-api")):
        wf.start("routed", id=f"i{n}", queue=queue)
    assert Worker().drain() == 3
    assert sorted(routed) == ["i0", "i1", "i2"]


@pytest.mark.parametrize("limited", [False, True], ids=["fast-path", "under-limits"])
def test_a_claim_of_several_queues_keeps_the_claim_order_across_them(
    define, workflow_clock, limited
):
    options = {"concurrency": Concurrency(limit=100)} if limited else {}

    @define("ordered", **options)
    def ordered(ctx, input):
        return None

    # Started in this order, a second apart: the most overdue first within a priority.
    plan = [
        ("a-late", "a", None),
        ("c-first", "c", 1),  # another queue: never claimed by a worker of a and b
        ("b-none", "b", None),
        ("a-p5", "a", 5),
        ("b-p2", "b", 2),
        ("b-p5", "b", 5),
        ("a-p2", "a", 2),
        ("b-none-2", "b", None),
    ]
    for id, queue, priority in plan:
        wf.start("ordered", id=id, queue=queue, priority=priority)
        workflow_clock.advance("1s")
    assert claim(["ordered"], ["a", "b"], limit=3) == ["a-late", "b-none", "b-none-2"]
    assert claim(["ordered"], ["b", "a"], limit=3) == ["b-p2", "a-p2", "a-p5"]
    assert claim(["ordered"], ["a", "b"], limit=10) == ["b-p5"]
    assert claim(["ordered"], ["a", "b"]) == []
    assert claim(["ordered"], ["c"]) == ["c-first"]


@pytest.mark.parametrize("limited", [False, True], ids=["fast-path", "under-limits"])
def test_a_claim_of_one_queue_takes_its_first_in_priority_order(define, workflow_clock, limited):
    options = {"rate_limit": RateLimit(max=100, duration="1m")} if limited else {}

    @define("one-queue", **options)
    def one_queue(ctx, input):
        return None

    for n, priority in enumerate([3, None, 1, 3, 2]):
        wf.start("one-queue", id=f"q{n}", queue="gpu", priority=priority)
        wf.start("one-queue", id=f"d{n}", priority=priority)
        workflow_clock.advance("1s")
    assert claim(["one-queue"], ["gpu"], limit=4) == ["q1", "q2", "q4", "q0"]
    assert claim(["one-queue"], ["gpu"], limit=4) == ["q3"]
    assert claim(["one-queue"], None, limit=3) == ["d1", "d2", "d4"]


def test_a_claim_of_a_queue_leaves_the_others_due_instances_where_they_are(define, workflow_clock):
    @define("left-alone")
    def left_alone(ctx, input):
        return None

    wf.start("left-alone", id="other", queue="slow-api")
    before = WorkflowInstance.objects.get(pk="other")
    assert claim(["left-alone"], ["gpu"]) == []
    assert claim(["left-alone"], ["gpu", "batch"]) == []
    after = WorkflowInstance.objects.get(pk="other")
    assert (after.status, after.lease_token, after.runs, after.wake_at, after.updated_at) == (
        Status.PENDING,
        None,
        0,
        before.wake_at,
        before.updated_at,
    )
    assert claim(["left-alone"], ["slow-api"]) == ["other"]


def test_a_concurrency_limit_counts_the_instances_of_every_queue(define, workflow_clock):
    @define("shared-limit", concurrency=Concurrency(limit=2))
    def shared(ctx, input):
        return None

    for n in range(3):
        wf.start("shared-limit", id=f"g{n}", queue="gpu")
        wf.start("shared-limit", id=f"s{n}", queue="slow-api")
    assert claim(["shared-limit"], ["gpu"], limit=1) == ["g0"]
    assert claim(["shared-limit"], ["slow-api"]) == ["s0"]  # one slot left of two
    assert claim(["shared-limit"], ["slow-api"]) == []
    assert claim(["shared-limit"], ["gpu"]) == []


def test_runworkflows_queue_claims_only_the_queues_given(routed, workflow_clock):
    for n, queue in enumerate(("gpu", "default", "slow-api", "batch")):
        wf.start("routed", id=f"r{n}", queue=queue)
    out = io.StringIO()
    call_command("runworkflows", "--once", "--queue", "gpu", "--queue", "batch", stdout=out)
    assert "Ran 2 execution(s)." in out.getvalue()
    assert sorted(routed) == ["r0", "r3"]
    call_command("runworkflows", "--once", stdout=out)  # every queue
    assert sorted(routed) == ["r0", "r1", "r2", "r3"]


def test_the_worker_logs_its_queues_at_start(routed, caplog):
    with caplog.at_level(logging.INFO, logger="django_workflows"):
        Worker(queues=["slow-api", "gpu"]).run_until_idle()
        Worker().run_until_idle()
    started = [r.getMessage() for r in caplog.records if " runs " in r.getMessage()]
    assert "from queue(s) gpu, slow-api on" in started[0]
    assert "from every queue on" in started[1]


def test_a_queue_worker_starts_only_the_schedules_of_its_queues_workflows(define, workflow_clock):
    @define(
        "nightly-gpu", queue="gpu", schedules=[Schedule(id="gpu-every-minute", cron="* * * * *")]
    )
    def nightly_gpu(ctx, input):
        return None

    @define("nightly-plain", schedules=[Schedule(id="plain-every-minute", cron="* * * * *")])
    def nightly_plain(ctx, input):
        return None

    Worker(queues=["slow-api"]).drain()  # syncs nothing it does not start: no occurrence
    workflow_clock.advance("61s")
    Worker(queues=["slow-api"]).drain()
    assert wf.list_instances() == []
    Worker(queues=["gpu"]).drain()
    workflow_clock.advance("61s")
    Worker(queues=["gpu"]).drain()
    started = wf.list_instances()
    assert started and {s.workflow for s in started} == {"nightly-gpu"}
    assert {s.queue for s in started} == {"gpu"}
    assert all(s.status == "completed" for s in started)
    workflow_clock.advance("61s")
    Worker().drain()  # an every-queue worker starts every schedule's occurrences
    assert "nightly-plain" in {s.workflow for s in wf.list_instances()}
