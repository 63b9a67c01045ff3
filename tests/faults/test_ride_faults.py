"""A database fault in the release a claim rides on (store.Ride): the statement that ends one
instance and leases the next is cancelled, or its connection killed. Neither lands; the
engine writes again, and both instances complete, each step run once."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

import django_workflows as wf
from django_workflows.models import Status, WorkflowInstance
from django_workflows.store.backends import backend
from tests.helpers import counting_worker

from .conftest import interrupt_the_lock_waiter

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("server")]


@pytest.mark.parametrize("fault", ["statement", "connection"])
def test_an_interrupted_release_with_a_ride_lands_once_and_the_next_instance_runs(define, fault):
    ran: list[str] = []
    in_step = threading.Event()
    go_on = threading.Event()

    def step(ctx) -> str:
        ran.append(ctx.instance_id)
        if ctx.instance_id == "first":
            in_step.set()
            assert go_on.wait(30)
        return ctx.instance_id

    @define("fault-ride")
    def ride(ctx, input):
        return ctx.step("only", lambda s: step(ctx))

    wf.start("fault-ride", None, id="first")
    wf.start("fault-ride", None, id="next")
    executed: list[int] = []
    claims: list[int] = []

    def serve() -> None:
        try:
            worker = counting_worker(
                claims, concurrency=1, poll_interval="50ms", lease_duration="60s"
            )
            executed.append(worker.run_until_idle())
        finally:
            connection.close()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        assert in_step.wait(30)
        with transaction.atomic():
            # The application holds the first instance's row: its release (and the ride on
            # it) waits for the lock, and the test interrupts it.
            WorkflowInstance.objects.select_for_update().get(pk="first")
            go_on.set()
            interrupt_the_lock_waiter(fault)
    finally:
        go_on.set()
        server.join(60)
    assert not server.is_alive(), "the worker did not return"
    assert executed == [2]
    assert sorted(ran) == ["first", "next"]  # each step once
    rows = WorkflowInstance.objects.order_by("id").values_list("id", "status", "runs")
    assert list(rows) == [("first", Status.COMPLETED, 1), ("next", Status.COMPLETED, 1)]
    assert [wf.get_status(id).output for id in ("first", "next")] == ["first", "next"]
    if backend(connection.alias).has_rides:
        assert claims == [1, 0]  # "next" came with the release that landed
