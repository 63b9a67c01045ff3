"""Parked instances (store/parking.py) when the database interrupts a release or a claim for
real: a statement cancelled (pg_cancel_backend, KILL QUERY) or a connection killed
(pg_terminate_backend, KILL) while it waits for a lock the test holds.

Whatever is interrupted rolls back whole: an interrupted release leaves its lease, which still
fills its key, and the parked instances of that key stay parked until the lease lapses, when
the next claim puts them back; an interrupted claim leaves nothing parked."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import Error, connection, transaction

import django_workflows as wf
from django_workflows import Concurrency, RateLimit
from django_workflows.models import RateLimitWindow, WorkflowInstance
from tests.helpers import claim_ids, release_as_holder

from .conftest import interrupt_the_lock_waiter

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("server")]

FAULTS = ["statement", "connection"]


class Running:
    """A callable run in a thread of its own (its own connection, closed at its end)."""

    def __init__(self, fn: Callable[[], Any], name: str) -> None:
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(fn,), name=name, daemon=True)
        self.thread.start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            fn()
        except BaseException as error:  # read by the test
            self.error = error
        finally:
            connection.close()

    def join(self, timeout: float = 60) -> BaseException | None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"{self.thread.name} still running after {timeout}s"
        return self.error


@pytest.fixture
def keyed(define):
    """One slot per key; `park-rated` counts its claims in a window too (a lock the claim
    takes after it parked)."""

    @define("park-fault", concurrency=Concurrency(limit=1, key=lambda input: input["k"]))
    def park_fault(ctx, input):
        return None

    @define(
        "park-rated",
        concurrency=Concurrency(limit=1, key=lambda input: input["k"]),
        rate_limit=RateLimit(max=100, duration="1h"),
    )
    def park_rated(ctx, input):
        return None


def parked() -> list[str]:
    return sorted(WorkflowInstance.objects.filter(parked=True).values_list("id", flat=True))


def lease_of(id: str) -> tuple[Any, ...]:
    return WorkflowInstance.objects.filter(pk=id).values_list(
        "status", "lease_token", "lease_until"
    )[0]


@pytest.mark.parametrize("fault", FAULTS)
def test_an_interrupted_release_keeps_its_lease_and_its_keys_parked_until_it_lapses(
    keyed, workflow_clock, fault
):
    """The holder's release has locked its row and ended its lease, and waits to put back its
    key's parked instance (the test holds that row): interrupted there, none of it is
    committed. The holder keeps its lease and its slot, the waiting instance stays parked, and
    a claim leases nothing. Once the lease lapses, the next claim puts the key's parked back
    and the holder, first in claim order, runs again (as after its worker's crash); its
    release then lets the waiting instance run."""
    wf.start("park-fault", {"k": "a"}, id="a-1")
    wf.start("park-fault", {"k": "a"}, id="a-2")
    assert claim_ids(["park-fault"], limit=5) == ["a-1"]
    assert claim_ids(["park-fault"], limit=5) == []
    assert parked() == ["a-2"]
    held = lease_of("a-1")
    with transaction.atomic():
        WorkflowInstance.objects.select_for_update().get(pk="a-2")
        releasing = Running(lambda: release_as_holder("a-1"), "release")
        interrupt_the_lock_waiter(fault)
        error = releasing.join()
    assert isinstance(error, Error), error
    assert lease_of("a-1") == held  # nothing of the release was committed
    assert parked() == ["a-2"]
    assert claim_ids(["park-fault"], limit=5) == []  # the lease still fills the key
    assert parked() == ["a-2"]
    workflow_clock.advance("31s")  # the 30 s lease lapsed
    assert claim_ids(["park-fault"], limit=5) == ["a-1"]
    assert parked() == []
    release_as_holder("a-1")
    assert claim_ids(["park-fault"], limit=5) == ["a-2"]


@pytest.mark.parametrize("fault", FAULTS)
def test_an_interrupted_claim_leaves_nothing_parked(keyed, fault):
    """A claim parks a full key's waiting instance, then waits for the lock of the rate-limit
    window it counts its lease in (the test holds that row): interrupted there, its park rolls
    back with the rest, and nothing stays parked. The next claim parks and leases as if the
    interrupted one never ran."""
    wf.start("park-rated", {"k": "a"}, id="a-1")
    wf.start("park-rated", {"k": "a"}, id="a-2")
    wf.start("park-rated", {"k": "b"}, id="b-1")
    assert claim_ids(["park-rated"], limit=1) == ["a-1"]  # and the window's row, counting 1
    with transaction.atomic():
        list(RateLimitWindow.objects.select_for_update().filter(workflow="park-rated"))
        claiming = Running(lambda: claim_ids(["park-rated"], limit=5), "claim")
        interrupt_the_lock_waiter(fault)
        error = claiming.join()
    assert isinstance(error, Error), error
    assert parked() == []
    leased = WorkflowInstance.objects.filter(lease_until__isnull=False)
    assert list(leased.values_list("id", flat=True)) == ["a-1"]
    assert RateLimitWindow.objects.get(workflow="park-rated").count == 1
    assert claim_ids(["park-rated"], limit=5) == ["b-1"]
    assert parked() == ["a-2"]  # parked now, behind a-1's live lease
    release_as_holder("a-1")
    assert parked() == []
    assert claim_ids(["park-rated"], limit=5) == ["a-2"]


@pytest.mark.parametrize("fault", FAULTS)
def test_an_interrupted_claim_leaves_a_lapsed_keys_parked_for_the_next_claim(
    keyed, workflow_clock, fault
):
    """The holder's lease lapsed; a claim puts back its key's parked instances and waits for
    the row of one of them (the test holds it): interrupted there, none is put back (all or
    nothing with the claim), and the next claim puts them back and leases the first."""
    wf.start("park-fault", {"k": "a"}, id="a-1", priority=9)
    assert claim_ids(["park-fault"], limit=5) == ["a-1"]
    wf.start("park-fault", {"k": "a"}, id="a-2", priority=1)
    wf.start("park-fault", {"k": "a"}, id="a-3", priority=2)
    assert claim_ids(["park-fault"], limit=5) == []
    assert parked() == ["a-2", "a-3"]
    held = lease_of("a-1")
    workflow_clock.advance("31s")  # the 30 s lease lapsed
    with transaction.atomic():
        WorkflowInstance.objects.select_for_update().get(pk="a-3")
        claiming = Running(lambda: claim_ids(["park-fault"], limit=5), "claim")
        interrupt_the_lock_waiter(fault)
        error = claiming.join()
    assert isinstance(error, Error), error
    assert parked() == ["a-2", "a-3"]
    assert lease_of("a-1") == held
    assert claim_ids(["park-fault"], limit=5) == ["a-2"]
    assert parked() == []
