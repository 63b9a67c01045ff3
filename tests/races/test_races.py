"""Races with real threads, each on its own connection (store contract: claim, signal, write).

They run on every database; on SQLite (one writer at a time, a 30 s busy timeout and IMMEDIATE
transactions) with fewer threads.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows import clock
from django_workflows.engine.registry import registry
from django_workflows.models import Signal, WorkflowInstance
from django_workflows.store import instances as store
from django_workflows.store import payloads
from tests.testapp.models import Execution

from .conftest import race, threads_for

pytestmark = pytest.mark.django_db(transaction=True)


def drain_until_idle(rounds: int = 50) -> int:
    total = 0
    for _ in range(rounds):
        ran = wf.drain()
        total += ran
        if not ran:
            return total
    raise AssertionError(f"drain() still found work after {rounds} rounds")


def test_sixty_signals_against_sixty_suspensions_lose_no_wakeup():
    count = 60
    name = f"ping-{uuid.uuid4().hex[:8]}"
    ids = [
        wf.start("wait-once", {"signal": name, "key": f"k{i}"}, id=f"wait-{i}").id
        for i in range(count)
    ]
    drainers = threads_for(server=4, sqlite=2)
    senders = threads_for(server=6, sqlite=2)
    signals_sent = threading.Event()
    sent = threading.Semaphore(0)

    def drain_loop() -> int:
        executed = 0
        while True:
            done = signals_sent.is_set()  # read before the drain: one more round after the last
            executed += wf.drain()
            if done:
                return executed

    def send(part: int) -> list[bool]:
        created = []
        for i in range(part, count, senders):
            created.append(wf.signal(name, {"n": i}, key=f"k{i}").created)
            sent.release()
        return created

    def watcher() -> None:
        for _ in range(count):
            assert sent.acquire(timeout=120)
        signals_sent.set()

    results = race(
        [drain_loop] * drainers + [lambda p=p: send(p) for p in range(senders)] + [watcher]
    )
    assert sum(len(r) for r in results[drainers : drainers + senders]) == count
    drain_until_idle()

    rows = {
        row.id: payloads.decode_instance(row) for row in WorkflowInstance.objects.filter(id__in=ids)
    }
    by_status = Counter(row.status for row in rows.values())
    stuck = sorted(
        (row.id, row.status, row.wake_at) for row in rows.values() if row.status != "completed"
    )
    assert by_status == {"completed": count}, f"{by_status}; not completed: {stuck[:10]}"
    for i in range(count):
        row = rows[f"wait-{i}"]
        assert row.output == {"n": i}, (row.id, row.output)
        assert row.lease_token is None and row.wake_at is None


def test_four_drains_racing_never_run_one_instance_twice():
    count = 40 if connection.vendor != "sqlite" else 20
    steps = 3
    ids = [wf.start("recorded-steps", {"steps": steps}, id=f"rec-{i}").id for i in range(count)]
    drainers = threads_for(server=4, sqlite=2)
    executed = race([wf.drain] * drainers)
    assert sum(executed) == count, executed  # one execution each: none ran twice, none waited
    drain_until_idle()

    runs = Counter((e.instance_id, e.step) for e in Execution.objects.all())
    twice = {k: n for k, n in runs.items() if n != 1}
    assert not twice, f"steps that ran more than once: {twice}"
    assert set(runs) == {(id, f"step-{s}") for id in ids for s in range(steps)}
    # every step of an instance ran in one thread, in its first execution
    threads = {}
    for e in Execution.objects.all():
        threads.setdefault(e.instance_id, set()).add((e.thread, e.run))
    assert all(len(v) == 1 for v in threads.values()), threads
    statuses = Counter(WorkflowInstance.objects.filter(id__in=ids).values_list("status", flat=True))
    assert statuses == {"completed": count}, statuses
    assert len({t for v in threads.values() for t, _ in v}) >= 1


def test_concurrent_claims_never_lease_one_instance_twice():
    count = 200 if connection.vendor != "sqlite" else 60
    ids = {wf.start("recorded-steps", {"steps": 1}, id=f"claim-{i}").id for i in range(count)}
    workflows = registry.pairs(None)
    claimers = threads_for(server=8, sqlite=4)

    def claim_all() -> list[tuple[str, str]]:
        got = []
        while True:
            token = uuid.uuid4().hex
            now = clock.now()
            claim = store.claim(
                "default",
                owner=f"owner-{threading.current_thread().name}",
                token=token,
                now=now,
                lease_until=now + timedelta(minutes=5),
                limit=7,
                workflows=workflows,
            )
            if not claim.instances:
                return got
            assert all(i.lease_token == token for i in claim.instances)
            got.extend((i.id, token) for i in claim.instances)

    results = race([claim_all] * claimers)
    claimed = [id for result in results for id, _ in result]
    duplicates = [id for id, n in Counter(claimed).items() if n > 1]
    assert not duplicates, f"leased twice: {duplicates[:10]}"
    assert set(claimed) == ids
    # the stored lease is the one each claimer was given
    tokens = dict(WorkflowInstance.objects.filter(id__in=ids).values_list("id", "lease_token"))
    assert tokens == {id: token for result in results for id, token in result}
    assert set(WorkflowInstance.objects.filter(id__in=ids).values_list("runs", flat=True)) == {1}


def test_signal_dedupe_under_concurrency():
    senders = 8
    name = f"dedupe-{uuid.uuid4().hex[:8]}"
    wf.start("wait-once", {"signal": name, "key": "k"}, id="dedupe-waiter")
    wf.drain()
    assert wf.get_status("dedupe-waiter").status == "suspended"

    results = race(
        [lambda n=n: wf.signal(name, {"n": n}, key="k", id="once") for n in range(senders)]
    )
    assert sum(r.created for r in results) == 1, results
    assert len({r.signal_id for r in results}) == 1, results
    assert {r.key for r in results} == {"k"}
    assert sum(r.woken for r in results) == 1, results
    assert Signal.objects.filter(name=name).count() == 1
    drain_until_idle()
    stored = payloads.decode_signal(Signal.objects.get(name=name))
    assert wf.get_status("dedupe-waiter").output == stored.payload


def test_idempotent_start_under_concurrency():
    starters = 8
    results = race(
        [lambda: wf.start("recorded-steps", {"steps": 1}, id="same-id") for _ in range(starters)]
    )
    assert sum(r.created for r in results) == 1, results
    assert {r.id for r in results} == {"same-id"}
    assert WorkflowInstance.objects.filter(id="same-id").count() == 1


def test_idempotent_start_under_concurrency_refuses_other_input():
    """Of starts with one id and different inputs, one creates; the others get a conflict."""
    starters = 6
    outcomes = race(
        [
            lambda n=n: _outcome(lambda: wf.start("recorded-steps", {"steps": n}, id="one-id"))
            for n in range(1, starters + 1)
        ]
    )
    created = [o for o in outcomes if getattr(o, "created", False)]
    conflicts = [o for o in outcomes if isinstance(o, wf.WorkflowIdConflictError)]
    assert len(created) == 1, outcomes
    assert len(conflicts) == starters - 1, outcomes


def _outcome(fn):
    try:
        return fn()
    except wf.WorkflowError as error:
        return error


def test_cancel_racing_drains_never_leaves_an_instance_stuck():
    count = 30 if connection.vendor != "sqlite" else 12
    ids = [wf.start("recorded-steps", {"steps": 3}, id=f"cancel-{i}").id for i in range(count)]
    waiting = [
        wf.start("wait-once", {"signal": "never", "key": f"c{i}"}, id=f"cancel-wait-{i}").id
        for i in range(count)
    ]
    drainers = threads_for(server=3, sqlite=2)

    def cancel_all() -> dict[str, bool]:
        accepted = {}
        for id in [x for pair in zip(ids, waiting, strict=True) for x in pair]:
            accepted[id] = wf.cancel(id, reason="race").accepted
            time.sleep(0.001)
        return accepted

    results = race([wf.drain] * drainers + [cancel_all])
    drain_until_idle()
    rows = WorkflowInstance.objects.filter(id__in=ids + waiting)
    for row in rows:
        assert row.lease_token is None and row.wake_at is None, (row.id, row.status, row.wake_at)
        assert row.status in ("cancelled", "completed"), (row.id, row.status, row.error)
        if row.status == "cancelled":
            assert row.error["name"] == "WorkflowCancelledError", row.error
    # the waiting ones can only end cancelled: nothing ever signals them
    assert set(rows.filter(id__in=waiting).values_list("status", flat=True)) == {"cancelled"}
    # a refused cancel came too late: the instance had completed already
    accepted = results[-1]
    for row in rows:
        if not accepted[row.id]:
            assert row.status == "completed", (row.id, row.status)
        if row.status == "cancelled":
            assert accepted[row.id], row.id


def test_signal_ids_become_visible_in_id_order():
    # The store contract: a reader that sees a signal's id sees every lower id too (a suspension
    # takes "the signals up to the last id" as the ones it has seen). Senders hold their
    # transactions open a moment; a watcher checks each view it gets.
    import random

    from django.db import transaction

    senders, each = threads_for(6, 3), 15
    done = threading.Event()
    views: list[tuple[int, set[int]]] = []

    def send(n: int):
        def fn() -> None:
            for i in range(each):
                with transaction.atomic():
                    wf.signal("order.placed", {"n": i}, key=f"s{n}")
                    time.sleep(random.uniform(0, 0.01))

        return fn

    def watch() -> None:
        try:
            while not done.is_set():
                ids = set(Signal.objects.values_list("id", flat=True))
                if ids:
                    views.append((max(ids), ids))
        finally:
            connection.close()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        race([send(n) for n in range(senders)])
    finally:
        done.set()
        watcher.join(10)
    every = set(Signal.objects.values_list("id", flat=True))
    assert len(every) == senders * each
    gaps = [
        (top, sorted(i for i in every if i <= top and i not in seen)[:5]) for top, seen in views
    ]
    assert not [gap for gap in gaps if gap[1]], gaps[:3]
    assert views  # the watcher saw the table while the senders ran


def test_concurrent_cancels_and_terminates_accept_one_of_each():
    n = threads_for(8, 3)
    for round in range(3):
        id = f"cx-{round}"
        wf.start("wait-once", {"signal": "never", "key": id}, id=id)
        wf.drain()
        cancels = race([lambda id=id: wf.cancel(id, reason="a").accepted] * n)
        terminates = race([lambda id=id: wf.terminate(id, reason="b").accepted] * n)
        assert (sum(cancels), sum(terminates)) == (1, 1), (cancels, terminates)


@pytest.mark.parametrize("lock", ["signals", "concurrency"])
def test_the_first_lockers_of_a_lock_row_never_deadlock(lock):
    # MySQL/MariaDB keep the store's locks as rows. A workflow's concurrency lock is created by
    # its first claims; lockers that all find the row missing insert it at once, and must not
    # deadlock doing so, under READ COMMITTED or REPEATABLE READ. (The signal lock's row comes
    # with migrate; here it is deleted too.)
    from django.db import transaction

    from django_workflows.models import StoreLock
    from django_workflows.store.backends import backend

    def take() -> str:
        try:
            with transaction.atomic():
                if lock == "concurrency":
                    backend("default").lock_names(["concurrency:new-workflow"])
                else:
                    backend("default").lock_signals(shared=False)
        except Exception as error:  # a deadlock, reported below with the others
            return repr(error)
        return "locked"

    for _ in range(10):
        StoreLock.objects.all().delete()
        outcomes = race([take] * threads_for(8, 3))
        assert set(outcomes) == {"locked"}, outcomes
