"""Parked instances (store/parking.py) against the releases of their keys' leases, with real
threads, each on its own connection.

The protocol's promise: an instance is parked only while its claim holds the row locks of its
key's live leases, so that the release of each of those leases, which locks its own row, comes
after the park and puts the key's parked instances back; a lapsed lease, which no release may
ever end, has its key's parked put back by the next claim under limits. A parked instance that
nothing puts back is never claimed again (the claim index leaves it out, whatever the poll
interval): each test here ends with the instance it waited for claimed, or run.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import pytest
from django.db import connection, transaction

import django_workflows as wf
from django_workflows import Concurrency
from django_workflows.models import WorkflowInstance
from tests.helpers import claim_ids, release_as_holder, wait_until, worker_thread

from .conftest import threads_for

pytestmark = pytest.mark.django_db(transaction=True)


# -- helpers --------------------------------------------------------------------------------------


class Running:
    """A callable run in a thread of its own (its own connection, closed at its end)."""

    def __init__(self, fn: Callable[[], Any], name: str) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(fn,), name=name, daemon=True)
        self.thread.start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self.result = fn()
        except BaseException as error:  # reported by join()
            self.error = error
        finally:
            connection.close()

    def join(self, timeout: float = 60) -> Any:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"{self.thread.name} still running after {timeout}s"
        if self.error is not None:
            raise self.error
        return self.result


def claim(limit: int = 10) -> list[str]:
    """One worker's claim under the registered limits (30 s leases): the ids it leased."""
    return claim_ids(["park-race"], limit=limit)


def parked() -> list[str]:
    """The parked instances, as last committed."""
    return sorted(WorkflowInstance.objects.filter(parked=True).values_list("id", flat=True))


def leased() -> list[str]:
    return sorted(
        WorkflowInstance.objects.filter(lease_until__isnull=False).values_list("id", flat=True)
    )


def waits_for_a_lock(runner: Running) -> None:
    """Until `runner` waits (for a row lock, on the servers; for the database's write lock, on
    SQLite): it has not finished, and on the servers a connection waits for a lock."""
    if connection.vendor in ("postgresql", "mysql"):
        from tests.faults.conftest import lock_waiters

        assert wait_until(lambda: bool(lock_waiters()), 20), "nothing waited for a lock"
    else:
        time.sleep(0.5)
    assert runner.thread.is_alive(), "it did not wait"


@pytest.fixture
def keyed(define):
    """One slot per key."""

    @define("park-race", concurrency=Concurrency(limit=1, key=lambda input: input["k"]))
    def park_race(ctx, input):
        return None


def needs_row_locks() -> None:
    if connection.vendor == "sqlite":
        pytest.skip(
            "SQLite has no row locks: a release's transaction holds the database's write lock, "
            "so no claim runs while a release is in flight"
        )


# -- real workers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("slots", "round"), [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1)], ids=lambda value: str(value)
)
def test_real_workers_drain_every_keys_instances_within_its_slots_and_leave_none_parked(
    define, slots, round
):
    """Workers claim, park, run and release many instances of a few keys at once, each claim
    racing the others' releases: every instance completes, never more of one key at once than
    its slots, and no row is left parked. A parked instance whose release came before its park,
    or that its key's release did not see, would stay parked for good (the workers' leases are
    renewed, none lapses): the drain would never end. Several rounds, so the interleavings
    vary; each instance sleeps once between two steps, so it releases its slot twice. With two
    slots a key is parked only with both holders' rows locked."""
    keys, per_key = (8, 6) if connection.vendor != "sqlite" else (4, 4)
    lock = threading.Lock()
    running: Counter[str] = Counter()
    overlaps: list[str] = []
    ran: Counter[str] = Counter()

    def work(key: str) -> None:
        with lock:
            running[key] += 1
            if running[key] > slots:
                overlaps.append(key)
        time.sleep(random.uniform(0.001, 0.02))
        with lock:
            running[key] -= 1
            ran[key] += 1

    @define("park-drain", concurrency=Concurrency(limit=slots, key=lambda input: input["k"]))
    def park_drain(ctx, input):
        ctx.step("first", lambda step: work(input["k"]))
        ctx.sleep("nap", "10ms")
        ctx.step("second", lambda step: work(input["k"]))

    ids = [
        wf.start("park-drain", {"k": f"k{k}"}, id=f"d-{k}-{n}").id
        for n in range(per_key)
        for k in range(keys)
    ]

    def completed() -> int:
        return WorkflowInstance.objects.filter(id__in=ids, status="completed").count()

    with ExitStack() as workers:
        for _ in range(threads_for(3, 2)):
            workers.enter_context(
                worker_thread(concurrency=4, poll_interval="50ms", lease_duration="1m")
            )
        done = wait_until(lambda: completed() == len(ids), 120)
    left = WorkflowInstance.objects.exclude(status="completed").values_list(
        "id", "status", "parked", "lease_until"
    )
    assert done, f"{completed()} of {len(ids)} completed; left: {sorted(left)}"
    assert overlaps == []
    assert ran == {f"k{k}": 2 * per_key for k in range(keys)}
    assert parked() == []


# -- a release in flight, a claim that would park --------------------------------------------------


@pytest.mark.parametrize("stage", ["row locked", "lease ended"])
def test_a_claim_parks_nothing_behind_a_release_in_flight(keyed, stage):
    """The holder's release has its row locked (`row locked`: its first statement; `lease
    ended`: its lease ended and its key's parked put back, none yet, all uncommitted) while a
    claim passes over the waiting instance: as last committed, the key is full, but the claim
    cannot lock the holder's row, so it must not park the waiting instance. Parked now, it
    would wait for a release that has already looked for it. Once the release commits, the
    next claim leases it."""
    needs_row_locks()
    wf.start("park-race", {"k": "a"}, id="a-1")
    wf.start("park-race", {"k": "a"}, id="a-2")
    wf.start("park-race", {"k": "b"}, id="b-1")
    assert claim() == ["a-1", "b-1"]
    in_flight, go_on = threading.Event(), threading.Event()

    def release_held_open() -> None:
        with transaction.atomic():
            if stage == "row locked":
                WorkflowInstance.objects.select_for_update().get(pk="a-1")
                in_flight.set()
                assert go_on.wait(30)
                release_as_holder("a-1")
            else:
                release_as_holder("a-1")
                in_flight.set()
                assert go_on.wait(30)

    releasing = Running(release_held_open, "release")
    try:
        assert in_flight.wait(30)
        assert claim() == []  # a-1's lease, as last committed, fills its key
        assert parked() == []  # its row was locked: a-2 is not parked
    finally:
        go_on.set()
        releasing.join()
    assert claim() == ["a-2"]
    assert parked() == []


def test_a_key_of_two_slots_is_parked_only_with_both_holders_rows_locked(define):
    """Two slots, both taken: one holder's release is in flight (its row locked, its lease
    ended, uncommitted), the other's lease runs on. The claim can lock one holder's row of
    two: the key is not parked (its in-flight release has already looked for parked
    instances), and once that release commits the next claim leases the waiting instance."""
    needs_row_locks()

    @define("park-two", concurrency=Concurrency(limit=2, key=lambda input: input["k"]))
    def park_two(ctx, input):
        return None

    for n in range(1, 4):
        wf.start("park-two", {"k": "a"}, id=f"a-{n}")
    assert claim_ids(["park-two"], limit=5) == ["a-1", "a-2"]
    in_flight, go_on = threading.Event(), threading.Event()

    def release_held_open() -> None:
        with transaction.atomic():
            release_as_holder("a-2")
            in_flight.set()
            assert go_on.wait(30)

    releasing = Running(release_held_open, "release")
    try:
        assert in_flight.wait(30)
        assert claim_ids(["park-two"], limit=5) == []
        assert parked() == []
    finally:
        go_on.set()
        releasing.join()
    assert claim_ids(["park-two"], limit=5) == ["a-3"]
    assert parked() == []


def test_a_claim_that_parks_after_the_release_committed_parks_nothing(keyed):
    """The other order: the release commits first, the claim then sees a key with a free slot
    and leases the waiting instance itself."""
    wf.start("park-race", {"k": "a"}, id="a-1")
    wf.start("park-race", {"k": "a"}, id="a-2")
    assert claim() == ["a-1"]
    release_as_holder("a-1")
    assert claim() == ["a-2"]
    assert parked() == []


# -- a claim that parked, a release that waits for it -----------------------------------------------


def test_a_release_waits_for_the_claim_that_parked_its_key_and_puts_the_parked_back(keyed):
    """A claim parks the waiting instance and holds its transaction open; the holder's release
    runs meanwhile: it must wait for the claim (whose park holds the holder's row), then see
    the parked instance and put it back, in its own transaction. After both commit, nothing is
    parked and the next claim leases the waiting instance. On SQLite the release waits for the
    database's write lock instead."""
    wf.start("park-race", {"k": "a"}, id="a-1")
    wf.start("park-race", {"k": "a"}, id="a-2")
    assert claim() == ["a-1"]
    has_parked, go_on = threading.Event(), threading.Event()

    def claim_held_open() -> tuple[list[str], list[str]]:
        with transaction.atomic():
            got = claim()
            seen = parked()  # this transaction's own view: what it parked
            has_parked.set()
            assert go_on.wait(30)
        return got, seen

    claiming = Running(claim_held_open, "claim")
    try:
        assert has_parked.wait(30)
        releasing = Running(lambda: release_as_holder("a-1"), "release")
        waits_for_a_lock(releasing)
        assert parked() == []  # the park is not committed yet
    finally:
        go_on.set()
    assert claiming.join() == ([], ["a-2"])
    releasing.join()
    assert parked() == []  # the release saw a-2 parked, and put it back
    assert leased() == []
    assert claim() == ["a-2"]


def test_many_claims_racing_one_release_leave_the_waiting_instance_claimable(keyed):
    """Several claims park (or would park) the waiting instances of one key while its holder
    releases: whatever the order, once all commit the key's next instance is claimable, and is
    leased by exactly one claim."""
    needs_row_locks()
    for n in range(1, 6):
        wf.start("park-race", {"k": "a"}, id=f"a-{n}")
    assert claim() == ["a-1"]
    start = threading.Barrier(5)

    def claim_after_the_barrier() -> list[str]:
        start.wait(30)
        return claim()

    def release_after_the_barrier() -> None:
        start.wait(30)
        time.sleep(random.uniform(0, 0.02))
        release_as_holder("a-1")

    runners = [Running(claim_after_the_barrier, f"claim-{i}") for i in range(4)]
    runners.append(Running(release_after_the_barrier, "release"))
    got = [id for runner in runners for id in (runner.join() or [])]
    assert got in ([], ["a-2"])  # at most the key's next, if a claim came after the release
    if not got:
        assert claim() == ["a-2"]
    assert leased() == ["a-2"]
    assert parked() in ([], ["a-3", "a-4", "a-5"])  # parked only behind a-2's live lease


# -- a lapsed lease ---------------------------------------------------------------------------------


def test_a_lapsed_lease_puts_its_keys_parked_back_at_the_next_claim(keyed, workflow_clock):
    """The holder's lease lapses with no release (its worker died): it holds no slot, and the
    next claim under limits puts its key's parked instances back and leases the first in claim
    order, here the waiting one (a higher priority); the holder runs again after it."""
    wf.start("park-race", {"k": "a"}, id="a-1", priority=9)
    assert claim() == ["a-1"]
    wf.start("park-race", {"k": "a"}, id="a-2", priority=1)
    assert claim() == []
    assert parked() == ["a-2"]
    workflow_clock.advance("29s")
    assert claim() == []  # still live
    assert parked() == ["a-2"]
    workflow_clock.advance("2s")  # the 30 s lease lapsed
    assert claim() == ["a-2"]
    assert parked() == []
    release_as_holder("a-2")
    assert claim() == ["a-1"]  # the lapsed holder, again


# -- a lease that ends without its holder's release ----------------------------------------------


def test_a_forced_delete_of_the_holder_puts_its_keys_parked_back(keyed):
    """delete(force=True) of a running instance ends its lease without a release (its worker
    finds the row gone at its next write) and leaves no lapsed lease behind: the delete itself
    must put back its key's parked instances, or they would wait for a lease that no longer
    exists."""
    wf.start("park-race", {"k": "a"}, id="a-1")
    wf.start("park-race", {"k": "a"}, id="a-2")
    assert claim() == ["a-1"]
    assert claim() == []
    assert parked() == ["a-2"]
    assert wf.delete("a-1", force=True)
    assert parked() == []
    assert claim() == ["a-2"]


def test_a_forced_delete_waits_for_the_claim_that_parked_its_key(keyed):
    """The forced delete of the holder comes while a claim that parked behind it holds its
    transaction open: the delete waits for the holder's row, then sees the parked instance
    and puts it back."""
    wf.start("park-race", {"k": "a"}, id="a-1")
    wf.start("park-race", {"k": "a"}, id="a-2")
    assert claim() == ["a-1"]
    has_parked, go_on = threading.Event(), threading.Event()

    def claim_held_open() -> list[str]:
        with transaction.atomic():
            got = claim()
            has_parked.set()
            assert go_on.wait(30)
        return got

    claiming = Running(claim_held_open, "claim")
    try:
        assert has_parked.wait(30)
        deleting = Running(lambda: wf.delete("a-1", force=True), "delete")
        waits_for_a_lock(deleting)
    finally:
        go_on.set()
    assert claiming.join() == []
    assert deleting.join() is True
    assert parked() == []
    assert claim() == ["a-2"]
