"""The wake-up counters (MySQL and MariaDB, which have no NOTIFY) never join the application's
lock order: two business transactions that each start a workflow and lock the same order row,
in opposite orders, do not deadlock on the counter row they share."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction
from django.db.models import Sum

import django_workflows as wf
from django_workflows.models import WakeupCounter
from django_workflows.store.backends import backend, base
from tests.procapp.models import Charge

from .conftest import race

pytestmark = pytest.mark.django_db(transaction=True)


def counted() -> int:
    return WakeupCounter.objects.aggregate(total=Sum("count"))["total"] or 0


def test_two_transactions_that_start_workflows_and_lock_a_row_in_opposite_orders_both_commit(
    define,
):
    if backend(connection.alias).has_listen_notify or connection.vendor == "sqlite":
        pytest.skip("counters with row locks are MySQL's and MariaDB's (SQLite has one writer)")

    @define("wakeup-order")
    def order(ctx, input):
        return input

    Charge.objects.create(key="order-1", order_id="order-1")
    started = threading.Event()
    locked = threading.Event()
    before = counted()

    def start_then_lock() -> str:
        base._thread.seed = 0  # both threads count in the same row
        with transaction.atomic():
            wf.start("wakeup-order", "a", id="wake-a")
            started.set()
            assert locked.wait(30)
            Charge.objects.select_for_update().get(key="order-1")  # waits for the other
        return "a"

    def lock_then_start() -> str:
        base._thread.seed = 0
        with transaction.atomic():
            Charge.objects.select_for_update().get(key="order-1")
            locked.set()
            assert started.wait(30)
            # With the count in the transaction this waited for the other's counter row while
            # the other waited for this one's order row: a deadlock, one business rolled back.
            wf.start("wakeup-order", "b", id="wake-b")
        return "b"

    assert sorted(race([start_then_lock, lock_then_start], timeout=90)) == ["a", "b"]
    assert {i.id for i in wf.list_instances(workflow="wakeup-order")} == {"wake-a", "wake-b"}
    assert counted() == before + 2  # each transaction counted once, after its commit


def test_a_transaction_that_starts_many_workflows_wakes_once_and_a_rollback_never(define):
    if backend(connection.alias).has_listen_notify:
        pytest.skip("PostgreSQL wakes the workers by NOTIFY, without counters")

    @define("wakeup-many")
    def many(ctx, input):
        return input

    # After the commit, once per transaction (MySQL, MariaDB); in it, once per start (SQLite).
    once = backend(connection.alias).counts_wakeups_after_commit
    before = counted()
    with transaction.atomic():
        for n in range(5):
            wf.start("wakeup-many", n, id=f"many-{n}")
    after_five = before + (1 if once else 5)
    assert counted() == after_five
    with transaction.atomic():
        wf.start("wakeup-many", 9, id="many-9")
        transaction.set_rollback(True)
    assert counted() == after_five  # a rolled-back start wakes nobody
    with transaction.atomic():
        wf.start("wakeup-many", 10, id="many-10")  # and the next transaction counts again
    assert counted() == after_five + 1
