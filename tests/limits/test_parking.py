"""Parked instances (store/parking.py): the due instances of a key at its limit leave the claim
index's range as a claim passes over them, and come back when a lease of their key ends.

On every database; the races between a claim that parks and a release that puts back are in
tests/races/test_parking_races.py, the faults in tests/faults/test_parking_faults.py.
"""

from __future__ import annotations

import time
import uuid
from datetime import timedelta

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows import Concurrency, clock
from django_workflows.engine.registry import registry
from django_workflows.models import WorkflowInstance
from django_workflows.store import instances as store
from django_workflows.store import parking
from django_workflows.store.limits import ConcurrencyRule
from tests.helpers import wait_until, worker_thread

from .test_limits import claim, release

pytestmark = pytest.mark.django_db


def parked() -> set[str]:
    return set(WorkflowInstance.objects.filter(parked=True).values_list("id", flat=True))


def keyed(define, name: str = "keyed", limit: int = 1):
    @define(name, concurrency=Concurrency(limit=limit, key=lambda input: input["k"]))
    def run(ctx, input):
        ctx.step("work", lambda step: input["k"])

    return run


def test_a_parked_instance_stays_due_with_its_status_wake_time_and_order(define, workflow_clock):
    keyed(define)
    wf.start("keyed", {"k": "a"}, id="a1")
    wf.start("keyed", {"k": "a"}, id="a2")
    before = WorkflowInstance.objects.get(pk="a2")
    assert claim("keyed") == ["a1"]
    assert claim("keyed") == []
    after = WorkflowInstance.objects.get(pk="a2")
    assert parked() == {"a2"}
    assert (after.status, after.wake_at, after.priority) == (
        before.status,
        before.wake_at,
        before.priority,
    )
    assert wf.get_status("a2").status == "pending"


@pytest.mark.parametrize(
    "status, waits",
    [("completed", []), ("suspended", [("approved", None)])],
    ids=["the fast write", "the ORM's write (it registers a wait)"],
)
def test_the_lease_holders_release_puts_its_keys_parked_back_and_no_other_key(
    define, workflow_clock, status, waits
):
    keyed(define)
    for id, key in [("a1", "a"), ("b1", "b"), ("a2", "a"), ("b2", "b")]:
        wf.start("keyed", {"k": key}, id=id)
    now = clock.now()
    held = store.claim(
        "default",
        owner="test",
        token="token-a1-b1",
        now=now,
        lease_until=now + timedelta(seconds=30),
        limit=10,
        workflows=registry.pairs(["keyed"]),
        concurrency={"keyed": ConcurrencyRule(per_key=1)},
    )
    assert [i.id for i in held.instances] == ["a1", "b1"]
    assert claim("keyed") == []
    assert parked() == {"a2", "b2"}
    # The release as the engine writes it (Runtime.write, with the instance's key).
    write = store.InstanceWrite(
        now=clock.now(),
        changes={"status": status},
        release=store.Release(None, waits, 0, False),
        unpark=store.parked_by(held.instances[0]),
    )
    assert store.write("default", "a1", "token-a1-b1", write) is not None
    assert parked() == {"b2"}
    assert claim("keyed") == ["a2"]


def test_a_release_without_the_lease_ends_with_its_key_still_parked(define, workflow_clock):
    keyed(define)
    wf.start("keyed", {"k": "a"}, id="a1")
    wf.start("keyed", {"k": "a"}, id="a2")
    assert claim("keyed") == ["a1"]
    assert claim("keyed") == []
    write = store.InstanceWrite(
        now=clock.now(),
        changes={"status": "completed"},
        release=store.Release(None, [], 0, had_waits=False),  # the fast write, where there is one
        unpark=("keyed", "a"),
    )
    assert store.write("default", "a1", uuid.uuid4().hex, write) is None  # not its lease
    if connection.vendor != "mysql":
        assert parked() == {"a2"}
    else:
        # MySQL's batch sends the put-back whatever the row lock's read found
        # (store/backends/mysql/batches.py): harmless, the next claim parks them again.
        assert parked() == set()
        assert claim("keyed") == []
        assert parked() == {"a2"}
    assert WorkflowInstance.objects.get(pk="a1").status == "running"


def test_a_lapsed_lease_holds_no_slot_so_its_keys_parked_come_back(define, workflow_clock):
    keyed(define)
    wf.start("keyed", {"k": "a"}, id="a1")
    wf.start("keyed", {"k": "a"}, id="a2")
    assert claim("keyed") == ["a1"]
    assert claim("keyed") == []
    assert parked() == {"a2"}
    workflow_clock.advance("31s")  # a1's process crashed: its lease ran out
    assert parking.unpark_lapsed("default", clock.now(), ["keyed"]) == 1
    assert parked() == set()
    assert claim("keyed") == ["a1"]  # due again and first in claim order; a2 waits again
    assert claim("keyed") == []
    assert parked() == {"a2"}


def test_a_lapsed_lease_of_a_version_no_worker_runs_lets_the_others_of_its_key_run(
    define, workflow_clock
):
    keyed(define)
    wf.start("keyed", {"k": "a"}, id="a1")
    wf.start("keyed", {"k": "a"}, id="a2")
    assert claim("keyed") == ["a1"]
    assert claim("keyed") == []
    WorkflowInstance.objects.filter(pk="a1").update(version=99)  # code nobody deploys now
    workflow_clock.advance("31s")
    assert claim("keyed") == ["a2"]


def test_a_key_with_several_slots_parks_only_when_every_slot_is_taken(define, workflow_clock):
    keyed(define, limit=2)
    for i in range(4):
        wf.start("keyed", {"k": "a"}, id=f"a{i}")
    assert claim("keyed", limit=1) == ["a0"]
    assert claim("keyed", limit=1) == ["a1"]
    assert parked() == set()  # a2 and a3 were candidates while a slot was free
    assert claim("keyed") == []
    assert parked() == {"a2", "a3"}
    release("a0")
    assert parked() == set()
    assert claim("keyed") == ["a2"]


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_drains_every_key_and_leaves_nothing_parked(define):
    """Claims run while executions hold their keys, so they park; each execution's release
    puts its key's back. Without that, the parked would never run."""

    @define("slow-keyed", concurrency=Concurrency(limit=1, key=lambda input: input["k"]))
    def slow(ctx, input):
        ctx.step("work", lambda step: time.sleep(0.3))

    ids = [wf.start("slow-keyed", {"k": f"k{i % 3}"}, id=f"i{i:02d}").id for i in range(12)]
    done = WorkflowInstance.objects.filter(id__in=ids, status="completed")
    with worker_thread(concurrency=6, poll_interval="50ms"):
        wait_until(lambda: done.count() == len(ids), 30)
    assert done.count() == len(ids)
    assert parked() == set()


def test_a_claim_parks_more_than_one_scan_holds_and_still_finds_the_free_keys(
    define, workflow_clock
):
    """The free keys' instances are behind 300 that wait on full keys: the claim scans on, in
    larger scans, parking as it goes, rather than return nothing."""
    keyed(define)
    for i in range(5):
        wf.start("keyed", {"k": f"full-{i}"}, id=f"h{i}")
    assert len(claim("keyed")) == 5
    for i in range(300):
        wf.start("keyed", {"k": f"full-{i % 5}"}, id=f"w{i:03d}")
    for i in range(3):
        wf.start("keyed", {"k": f"free-{i}"}, id=f"z{i}")
    assert claim("keyed", limit=3) == ["z0", "z1", "z2"]
    assert len(parked()) == 300


def test_one_keys_many_due_instances_ahead_do_not_shrink_a_claim(define, workflow_clock):
    """Forty of one key come first and none runs, so nothing is full and nothing parks: the
    claim's first scan (two rows per slot asked for) holds one leasable instance, and it scans
    again, larger, until it has a slot's worth for each of the ten it was asked for."""
    keyed(define)
    for i in range(40):
        wf.start("keyed", {"k": "busy"}, id=f"b{i:02d}")
    for i in range(9):
        wf.start("keyed", {"k": f"other-{i}"}, id=f"o{i}")
    assert claim("keyed") == ["b00", *(f"o{i}" for i in range(9))]
    assert parked() == set()


@pytest.mark.django_db(transaction=True)
def test_claims_look_for_lapsed_leases_keys_at_most_once_a_second_once_committed():
    from django.db import transaction

    now = clock.now()
    with transaction.atomic():
        assert parking.unpark_lapsed_due("default", now)
    assert not parking.unpark_lapsed_due("default", now + timedelta(milliseconds=500))
    with pytest.raises(RuntimeError), transaction.atomic():  # a claim rolled back
        assert parking.unpark_lapsed_due("default", now + timedelta(seconds=1))
        raise RuntimeError
    with transaction.atomic():
        assert parking.unpark_lapsed_due("default", now + timedelta(seconds=1))
    assert not parking.unpark_lapsed_due("default", now + timedelta(seconds=1.5))
    assert parking.unpark_lapsed_due("default", now - timedelta(hours=1))  # a clock set back
