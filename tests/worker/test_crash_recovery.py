"""The reference's crash-recovery test: two workers on one database and a manual clock."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows.worker import Worker
from tests.testapp.workflows import fulfilment_id

pytestmark = pytest.mark.django_db(transaction=True)

ORDER = {
    "id": "c0ffee00",
    "user_id": "u_42",
    "items": [{"product": "kibble", "quantity": 1}],
    "total": 2499,
}


def in_thread(fn):
    def run():
        try:
            fn()
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_second_worker_takes_over_once_the_dead_ones_lease_expired(
    world, workflow_clock, monkeypatch
):
    wf.start("order-fulfilment", ORDER, id=fulfilment_id(ORDER["id"]))
    # The process dies while reserving stock, after the payment provider charged the card.
    hung, late = threading.Event(), threading.Event()
    keys: list[str] = []
    reserve = world.reserve

    def hanging_reserve(items, key):
        keys.append(key)
        if len(keys) == 1:
            hung.set()
            late.wait(10)  # a hung socket; its result comes back too late
        return reserve(items, key)

    monkeypatch.setattr(world, "reserve", hanging_reserve)
    first = Worker(id="first", lease_duration="30s")
    draining = in_thread(first.drain)
    assert hung.wait(5)
    first.stop()  # shut down with the step still hanging: its lease stays in the database

    second = Worker(id="second", lease_duration="30s")
    assert second.drain() == 0  # the lease still holds
    workflow_clock.advance("31s")
    assert second.drain() == 1

    status = wf.get_status(fulfilment_id(ORDER["id"]), journal=True)
    assert status.status == "suspended"
    assert [(w.signal, w.key) for w in status.waits] == [
        ("shipment.delivered", ORDER["id"]),
        ("shipment.returned", ORDER["id"]),
    ]
    assert len(world.charges) == 1  # journaled: not charged again
    assert keys == [f"order-{ORDER['id']}:reserve-stock", f"order-{ORDER['id']}:reserve-stock"]

    # The hung attempt finishes now: what it writes must not land.
    late.set()
    draining.join(10)
    assert not draining.is_alive()
    after = wf.get_status(fulfilment_id(ORDER["id"]), journal=True)
    entry = next(e for e in after.journal if e.name == "reserve-stock")
    assert entry.status == "completed" and entry.attempt == 2
    assert after.status == "suspended" and after.lease_owner == "second"
    assert after.updated_at == status.updated_at


def test_the_crashed_attempt_counts_against_the_steps_attempts(world, workflow_clock, monkeypatch):
    wf.start("flaky", {"retry": {"attempts": 1}}, id="flaky-1")
    hung, late = threading.Event(), threading.Event()

    def hanging_charge(order, key):
        hung.set()
        late.wait(10)
        return {"charge_id": "late"}

    monkeypatch.setattr(world, "charge", hanging_charge)
    first = Worker(id="first")
    draining = in_thread(first.drain)
    assert hung.wait(5)
    first.stop()
    workflow_clock.advance("31s")
    assert Worker(id="second").drain() == 1
    status = wf.get_status("flaky-1")
    assert status.status == "failed"
    assert status.error["name"] == "StepFailedError" and status.error["attempts"] == 1
    late.set()
    draining.join(10)
    assert wf.get_status("flaky-1").status == "failed"
