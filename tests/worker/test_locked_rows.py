"""A row an application transaction holds locked (select_for_update, or cancel() inside an
atomic() that then does slow work) costs no lease: the renewal skips it instead of waiting, the
other instances' leases are renewed, and the locked one is renewed once the lock is released,
before any other worker can claim it."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction

import django_workflows as wf
from django_workflows import clock
from django_workflows.models import WorkflowInstance
from django_workflows.store import instances as store
from tests.helpers import claim_ids, wait_until, worker_thread

pytestmark = pytest.mark.django_db(transaction=True)


def servers_only() -> None:
    if connection.vendor == "sqlite":
        pytest.skip(
            "SQLite has no row locks: an application transaction that writes holds the whole "
            "database, renewals and claims alike wait for it (see run-the-worker.md)"
        )


def hold_row(id: str, *, how: str, locked: threading.Event, release: threading.Event):
    """A thread that locks instance `id` in a transaction of its own until `release`."""

    def run() -> None:
        try:
            with transaction.atomic():
                if how == "cancel":
                    wf.cancel(id, reason="support")
                else:
                    WorkflowInstance.objects.select_for_update().get(pk=id)
                locked.set()
                release.wait(30)  # the application's slow work, inside the transaction
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, name=f"app holding {id}")
    thread.start()
    return thread


@pytest.mark.parametrize("how", ["select_for_update", "cancel"])
def test_a_renewal_skips_a_row_another_transaction_holds_without_losing_it(how, define):
    servers_only()

    @define("held")
    def held(ctx, input):
        return ctx.step("noop", lambda step: None)

    for id in ("held-1", "held-2"):
        wf.start("held", None, id=id)
    assert sorted(claim_ids(["held"], limit=2, lease="30s")) == ["held-1", "held-2"]
    tokens = dict(WorkflowInstance.objects.values_list("id", "lease_token"))
    locked, release = threading.Event(), threading.Event()
    app = hold_row("held-1", how=how, locked=locked, release=release)
    try:
        assert locked.wait(10)
        renewed: list[store.Renewal] = []

        def renew() -> None:
            try:
                until = clock.now() + timedelta(minutes=5)
                renewed.append(store.renew("default", sorted(tokens.items()), until))
            finally:
                connections.close_all()

        renewer = threading.Thread(target=renew)
        renewer.start()
        renewer.join(10)
        assert not renewer.is_alive(), "the renewal waited for the application's lock"
    finally:
        release.set()
        app.join(10)
    [renewal] = renewed
    assert list(renewal.flags) == ["held-2"]
    assert renewal.busy == ["held-1"]  # not renewed this time, and not lost
    row = WorkflowInstance.objects.get(pk="held-2")
    assert row.lease_until > clock.now() + timedelta(minutes=4)


@pytest.mark.parametrize("how", ["select_for_update", "cancel"])
def test_a_row_held_longer_than_the_lease_costs_no_lease_and_no_step_runs_twice(how, define):
    # One worker runs four instances inside long steps, on a 3-second lease; an application
    # transaction holds one of their rows locked for more than two leases, while a second
    # worker tries to claim all along. No lease lapses: every step runs once, in the first
    # worker, and the held instance goes on once the application commits.
    servers_only()
    attempts: dict[str, int] = {}
    finish = threading.Event()
    guard = threading.Lock()

    @define("long-steps")
    def long_steps(ctx, input):
        def work(step):
            with guard:
                attempts[ctx.instance_id] = attempts.get(ctx.instance_id, 0) + 1
            while not finish.is_set():
                if step.cancelled.wait(0.05):
                    return "stopped"  # the cancel, once the application commits it
            return "done"

        return ctx.step("work", work)

    ids = [f"long-{n}" for n in range(4)]
    for id in ids:
        wf.start("long-steps", None, id=id)
    locked, release = threading.Event(), threading.Event()
    options = {"poll_interval": "100ms", "lease_duration": "3s", "concurrency": 4}
    with worker_thread(id="first", **options):
        assert wait_until(lambda: len(attempts) == 4, 20)
        app = hold_row("long-0", how=how, locked=locked, release=release)
        try:
            assert locked.wait(10)
            with worker_thread(id="second", **options):
                time.sleep(7.5)  # two and a half leases with the row held
                release.set()
                app.join(10)
                time.sleep(2)  # the second worker goes on trying to claim
                # Each still running, in the first worker, under a lease that holds.
                rows = WorkflowInstance.objects.filter(pk__in=ids, status="running")
                assert rows.count() == (3 if how == "cancel" else 4)
                assert all(r.lease_owner == "first" and r.lease_until > clock.now() for r in rows)
        finally:
            release.set()
            app.join(10)
        finish.set()
        expected = "cancelled" if how == "cancel" else "completed"
        assert wait_until(lambda: wf.get_status("long-0").status == expected, 20)
        assert wait_until(
            lambda: all(wf.get_status(id).status == "completed" for id in ids[1:]), 20
        )
    assert attempts == dict.fromkeys(ids, 1)
    assert set(WorkflowInstance.objects.values_list("runs", flat=True)) == {1}
