"""A claim that rides on a release (store.Ride): where the database can (PostgreSQL), the
statement that releases one instance also leases the next due one to the same worker, which
runs it on the same thread without a claim of its own. It leases what a claim without limits
would, never what another claim holds, and nothing unless the release itself lands."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

import django_workflows as wf
from django_workflows import clock
from django_workflows.models import Status, WorkflowInstance
from django_workflows.store import instances as store
from django_workflows.store.backends import backend
from django_workflows.worker import Worker
from tests.helpers import counting_worker, wait_until, worker_thread

pytestmark = pytest.mark.django_db(transaction=True)

LEASE = timedelta(seconds=30)


@pytest.fixture
def rides():
    if not backend(connection.alias).has_rides:
        pytest.skip(f"{connection.vendor}: a release leases nothing more (the worker claims)")
    store_backend = backend(connection.alias)
    # asked once per process: not in the statements a test counts
    assert store_backend._functions.available(connection)
    assert store_backend._ride_function.available(connection)


@pytest.fixture
def ran(define):
    """A one-step workflow `ride-once`; the ids whose step ran, in order."""
    steps: list[str] = []
    guard = threading.Lock()

    def note(ctx):
        with guard:
            steps.append(ctx.instance_id)
        return ctx.instance_id

    @define("ride-once")
    def once(ctx, input):
        return ctx.step("note", lambda step: note(ctx))

    @define("ride-other")
    def other(ctx, input):
        return ctx.step("note", lambda step: note(ctx))

    return steps


def lease(id: str) -> str:
    """Lease instance `id` as a claim would: its token."""
    token = uuid.uuid4().hex
    now = clock.now()
    claimed = store.claim(
        "default",
        owner="holder",
        token=token,
        now=now,
        lease_until=now + LEASE,
        limit=1,
        workflows=[("ride-once", 1)],
    )
    assert [i.id for i in claimed.instances] == [id]
    return token


def ride(**options) -> store.Ride:
    return store.Ride(
        owner="rider",
        token=uuid.uuid4().hex,
        lease_duration=LEASE,
        workflows=options.pop("workflows", [("ride-once", 1), ("ride-other", 1)]),
        **options,
    )


def release(id: str, token: str, the_ride: store.Ride, **changes) -> store.LeaseFlags | None:
    """The write that ends instance `id` (completed), with `the_ride`."""
    write = store.InstanceWrite(
        now=clock.now(),
        changes={"status": Status.COMPLETED, "output": None, "error": None, **changes},
        release=store.Release(None, [], 0, had_waits=False),
    )
    return store.write("default", id, token, write, the_ride)


def test_a_release_leases_the_next_due_instance_in_the_same_statement(rides, ran):
    wf.start("ride-once", None, id="a")
    wf.start("ride-once", {"order": 7, "at": "2026-12-02"}, id="b")
    token = lease("a")
    the_ride = ride()
    with CaptureQueriesContext(connection) as statements:
        flags = release("a", token, the_ride)
    assert len(statements.captured_queries) == 1
    assert flags is not None and flags.rode is not None
    [leased] = flags.rode.instances
    assert (leased.id, leased.input, leased.runs) == ("b", {"order": 7, "at": "2026-12-02"}, 1)
    assert leased.created_at == WorkflowInstance.objects.get(pk="b").created_at
    b = WorkflowInstance.objects.get(pk="b")
    assert (b.lease_owner, b.lease_token, b.runs, b.status) == (
        "rider",
        the_ride.token,
        1,
        Status.RUNNING,
    )
    assert b.lease_until - b.updated_at == LEASE
    a = WorkflowInstance.objects.get(pk="a")
    assert (a.status, a.lease_token) == (Status.COMPLETED, None)


def test_a_release_leases_one_instance_while_the_statistics_say_the_table_is_empty(rides, ran):
    # As autovacuum leaves the table of a new deployment: analyzed while empty. The planner
    # then reads the instances first and runs a pick in a subquery again for each of them;
    # each run skips what the statement already leased, so such a pick leased them all.
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {WorkflowInstance._meta.db_table}")
    for n in range(20):
        wf.start("ride-once", None, id=f"r{n:02d}")
    token = lease("r00")
    the_ride = ride()
    connection.close()  # PL/pgSQL plans the function once per session: plan it now
    flags = release("r00", token, the_ride)
    assert flags is not None and flags.rode is not None
    assert [i.id for i in flags.rode.instances] == ["r01"]
    assert list(
        WorkflowInstance.objects.filter(lease_token=the_ride.token).values_list("id", flat=True)
    ) == ["r01"]


def test_a_release_with_nothing_due_leases_nothing(rides, ran):
    wf.start("ride-once", None, id="a")
    wf.start("ride-once", None, id="later")
    WorkflowInstance.objects.filter(pk="later").update(wake_at=clock.now() + LEASE)
    flags = release("a", lease("a"), ride())
    assert flags is not None and flags.rode is None
    assert WorkflowInstance.objects.get(pk="later").lease_token is None


def test_a_release_whose_lease_is_gone_writes_and_leases_nothing(rides, ran):
    wf.start("ride-once", None, id="a")
    wf.start("ride-once", None, id="b")
    lease("a")
    assert release("a", "not-the-token", ride()) is None
    assert WorkflowInstance.objects.get(pk="a").status == Status.RUNNING
    assert WorkflowInstance.objects.get(pk="b").lease_token is None


def test_a_ride_takes_the_claims_order_and_only_its_workflows_and_queues(rides, ran):
    wf.start("ride-once", None, id="a")
    wf.start("ride-other", None, id="other-workflow")
    wf.start("ride-once", None, id="other-queue", queue="elsewhere")
    wf.start("ride-once", None, id="late", priority=5)
    wf.start("ride-once", None, id="first", priority=1)
    the_ride = ride(workflows=[("ride-once", 1)], queues=["default"])
    flags = release("a", lease("a"), the_ride)
    assert flags is not None and flags.rode is not None
    assert [i.id for i in flags.rode.instances] == ["first"]


def test_a_worker_of_several_queues_rides_nothing_and_its_release_lands(rides, ran):
    # Each queue is a range of its own, which only a claim merges in claim order.
    wf.start("ride-once", None, id="a")
    wf.start("ride-once", None, id="b")
    flags = release("a", lease("a"), ride(queues=["default", "elsewhere"]))
    assert flags is not None and flags.rode is None
    assert WorkflowInstance.objects.get(pk="a").status == Status.COMPLETED
    assert WorkflowInstance.objects.get(pk="b").lease_token is None


def test_while_a_lease_has_lapsed_a_ride_leases_nothing(rides, ran):
    # The lapsed instance is the loop's to claim (its claims read the lapsed range): a busy
    # worker's rides would otherwise keep it waiting.
    wf.start("ride-once", None, id="a")
    wf.start("ride-once", None, id="stale")
    wf.start("ride-once", None, id="b")
    token = lease("a")
    WorkflowInstance.objects.filter(pk="stale").update(
        lease_token="gone", lease_owner="crashed", lease_until=clock.now() - LEASE
    )
    flags = release("a", token, ride())
    assert flags is not None and flags.rode is None
    assert WorkflowInstance.objects.get(pk="b").lease_token is None
    WorkflowInstance.objects.filter(pk="stale").update(lease_until=clock.now() + LEASE)
    wf.start("ride-once", None, id="c")
    flags = release("b", lease("b"), ride())  # no lease lapsed now
    assert flags is not None and flags.rode is not None
    assert [i.id for i in flags.rode.instances] == ["c"]


def test_a_ride_never_leases_the_writers_own_instance(rides, ran):
    # Its lease has lapsed and its release makes it due at once: it is still not the ride's.
    wf.start("ride-once", None, id="a")
    token = lease("a")
    WorkflowInstance.objects.filter(pk="a").update(lease_until=clock.now() - LEASE)
    write = store.InstanceWrite(
        now=clock.now(),
        changes={"status": Status.SUSPENDED},
        release=store.Release(clock.now() - LEASE, [], 0, had_waits=False),
    )
    flags = store.write("default", "a", token, write, ride())
    assert flags is not None and flags.rode is None
    a = WorkflowInstance.objects.get(pk="a")
    assert (a.status, a.lease_token) == (Status.SUSPENDED, None)


def test_a_ride_passes_over_an_instance_another_transaction_holds(rides, ran):
    wf.start("ride-once", None, id="a")
    wf.start("ride-once", None, id="b")
    wf.start("ride-once", None, id="c")
    token = lease("a")
    held = threading.Event()
    done = threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                WorkflowInstance.objects.select_for_update().get(pk="b")
                held.set()
                assert done.wait(30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert held.wait(30)
    try:
        flags = release("a", token, ride())
    finally:
        done.set()
        holder.join(30)
    assert flags is not None and flags.rode is not None
    assert [i.id for i in flags.rode.instances] == ["c"]


def test_a_ridden_instance_that_ran_before_comes_with_its_journal(rides, define):
    @define("ride-twice")
    def twice(ctx, input):
        ctx.step("first", lambda step: "one")
        ctx.sleep("pause", "1h")
        return ctx.step("second", lambda step: "two")

    @define("ride-once")
    def once(ctx, input):
        return input

    wf.start("ride-twice", None, id="resumed")
    wf.drain()  # it ran its first step and sleeps
    WorkflowInstance.objects.filter(pk="resumed").update(wake_at=clock.now())
    wf.start("ride-once", None, id="a")
    flags = release("a", lease("a"), ride(workflows=[("ride-twice", 1)]))
    assert flags is not None and flags.rode is not None
    [resumed] = flags.rode.instances
    assert resumed.id == "resumed" and resumed.runs == 2
    assert {"first", "pause"} <= {name for name, _ in flags.rode.journals["resumed"]}


def test_a_busy_worker_runs_what_its_releases_leased_without_claims_of_its_own(ran):
    for n in range(8):
        wf.start("ride-once", None, id=f"i-{n}")
    claims: list[int] = []

    executed = counting_worker(claims, concurrency=1, poll_interval="50ms").run_until_idle()
    assert executed == 8
    assert sorted(ran) == [f"i-{n}" for n in range(8)]  # each once
    assert set(WorkflowInstance.objects.values_list("status", "runs")) == {(Status.COMPLETED, 1)}
    if backend(connection.alias).has_rides:
        # The first claim; then each release leased the next; the last claim found nothing.
        assert claims == [1, 0]
    else:
        assert claims == [1] * 8 + [0]


def test_workers_riding_at_once_never_run_an_instance_twice(ran):
    for n in range(60):
        wf.start("ride-once", None, id=f"r-{n:02d}")
    results: list[int] = []

    def serve() -> None:
        try:
            results.append(Worker(concurrency=3, poll_interval="50ms").run_until_idle())
        finally:
            connection.close()

    threads = [threading.Thread(target=serve, daemon=True) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert sum(results) == 60
    assert sorted(ran) == [f"r-{n:02d}" for n in range(60)]
    assert set(WorkflowInstance.objects.values_list("status", "runs")) == {(Status.COMPLETED, 1)}


def test_a_stopping_worker_rides_nothing(ran):
    worker = Worker(concurrency=1)
    worker.stop()
    assert worker._ride() is None


def test_a_worker_under_limits_rides_nothing(define):
    @define("ride-limited", concurrency=wf.Concurrency(limit=1))
    def limited(ctx, input):
        return input

    assert Worker(workflows=["ride-limited"])._ride() is None


def test_a_worker_that_stops_while_riding_leaves_no_lease_behind(define):
    # Each step takes a little while, so the stop comes while releases ride.
    ran: list[str] = []
    guard = threading.Lock()

    def note(ctx) -> str:
        time.sleep(0.01)
        with guard:
            ran.append(ctx.instance_id)
        return ctx.instance_id

    @define("ride-slow")
    def slow(ctx, input):
        ctx.step("note", lambda step: note(ctx))
        return ctx.step("again", lambda step: "done")

    for n in range(40):
        wf.start("ride-slow", None, id=f"s-{n:02d}")
    with worker_thread(concurrency=2, poll_interval="50ms", shutdown_timeout="5s"):
        assert wait_until(lambda: len(ran) >= 10, 30)
    # Every instance it leased, by a claim or a ride, was run to its end or handed back.
    assert not WorkflowInstance.objects.filter(lease_token__isnull=False).exists()
    wf.drain()
    assert set(WorkflowInstance.objects.values_list("status", flat=True)) == {Status.COMPLETED}
    assert sorted(ran) == [f"s-{n:02d}" for n in range(40)]  # each step once
