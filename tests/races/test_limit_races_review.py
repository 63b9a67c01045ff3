"""Claims under limits racing each other, from a review against the store contract: the locks
they take on rate-limit windows, and purge deleting windows while claims lock them."""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import QuerySet

import django_workflows as wf
from django_workflows import RateLimit, clock
from django_workflows.models import RateLimitWindow, WorkflowInstance
from django_workflows.store.limits import SCAN
from tests.helpers import claim_ids

from .conftest import race, threads_for

pytestmark = pytest.mark.django_db(transaction=True)


def claim_once(name: str, *, limit: int = 1) -> list[str]:
    return claim_ids([name], limit=limit, lease="5m")


def claim_all(name: str, *, limit: int = 1) -> list[str]:
    got: list[str] = []
    for _ in range(500):
        ids = claim_once(name, limit=limit)
        if not ids:
            return got
        got += ids
    raise AssertionError("claims never ran dry")


def test_claims_taking_room_in_one_window_never_deadlock(define, caplog):
    # Each claim locks the window it takes room in. Locking it by an insert that finds the row
    # there (MySQL/MariaDB: a shared lock on the duplicate) and then FOR UPDATE is the classic
    # lock upgrade two claims deadlock on; the claim's retries then hide it, at a cost.
    @define("review-window", rate_limit=RateLimit(max=10_000, duration="1h", key=lambda i: i["k"]))
    def rated(ctx, input):
        return None

    n = 120 if connection.vendor != "sqlite" else 20
    for i in range(n):
        wf.start("review-window", {"k": ["Beta", "alpha", "gamma"][i % 3]}, id=f"w-{i}")
    for key in ("Beta", "alpha", "gamma"):  # the windows' rows exist from here on
        claim_once_of_key("review-window", key)
    caplog.set_level(logging.DEBUG, logger="django_workflows")
    results = race([lambda: claim_all("review-window", limit=2)] * threads_for(8, 3))
    claimed = [id for r in results for id in r]
    assert len(claimed) == n - 3 == len(set(claimed))
    deadlocks = [r for r in caplog.records if "Deadlock in claim" in r.getMessage()]
    assert not deadlocks, f"{len(deadlocks)} claims deadlocked and ran again"


def claim_once_of_key(name: str, key: str) -> None:
    # Claims take instances in id order: w-0, w-1, w-2 are Beta's, alpha's and gamma's first.
    index = ["Beta", "alpha", "gamma"].index(key)
    assert claim_once(name) == [f"w-{index}"]


def test_claims_creating_one_window_at_the_same_moment_never_deadlock(define, caplog):
    # Every claim finds the window's row missing and inserts it; on MySQL/MariaDB the ones that
    # find the first one's row there wait for a lock on it. If that lock is a shared one (INSERT
    # IGNORE's), they all get it at its commit and then deadlock upgrading it to lock the row.
    @define(
        "review-new-window", rate_limit=RateLimit(max=10_000, duration="1h", key=lambda i: i["k"])
    )
    def rated(ctx, input):
        return None

    threads = threads_for(8, 3)
    caplog.set_level(logging.DEBUG, logger="django_workflows")
    for round in range(3):
        # Enough instances that no claim finds every candidate locked by the others.
        for i in range(threads * SCAN):
            wf.start("review-new-window", {"k": f"key-{round}"}, id=f"r{round}-{i:03}")
        results = race([lambda: claim_once("review-new-window")] * threads)
        claimed = [id for r in results for id in r]
        assert len(claimed) == threads == len(set(claimed))
        assert {id.split("-")[0] for id in claimed} == {f"r{round}"}
        window = RateLimitWindow.objects.get(workflow="review-new-window", key=f"key-{round}")
        assert window.count == threads
        WorkflowInstance.objects.all().delete()  # the next round's claims find only its own
    deadlocks = [r for r in caplog.records if "Deadlock in claim" in r.getMessage()]
    assert not deadlocks, f"{len(deadlocks)} claims deadlocked and ran again"


def test_a_purge_deleting_a_window_a_claim_waits_for_keeps_the_claims_count(define, monkeypatch):
    # Purge locks the ended windows (SKIP LOCKED) and deletes them; a claim that takes room in
    # one meanwhile waits for its lock. Its count must land in a window row all the same (or
    # the next claims see an empty window and admit `max` more), and neither may fail.
    @define("review-purged", rate_limit=RateLimit(max=1, duration="1h"))
    def rated(ctx, input):
        return None

    wf.start("review-purged", {}, id="p-1")
    wf.start("review-purged", {}, id="p-2")
    RateLimitWindow.objects.create(
        workflow="review-purged",
        scope="workflow",
        key="",
        window_end=clock.now() - timedelta(days=2),
        count=1,
    )
    locked = threading.Event()
    raw_delete = QuerySet._raw_delete

    def paused_delete(self, using):
        if self.model is RateLimitWindow and not locked.is_set():
            locked.set()  # purge holds the window: the claim reaches it meanwhile
            time.sleep(0.5)
        return raw_delete(self, using)

    monkeypatch.setattr(QuerySet, "_raw_delete", paused_delete)

    def claim() -> list[str]:
        locked.wait(10)
        return claim_once("review-purged")

    purged, claimed = race([lambda: wf.purge(older_than="1d"), claim])
    assert claimed == ["p-1"]
    assert purged.rate_limits in (0, 1)
    window = RateLimitWindow.objects.get(workflow="review-purged", scope="workflow")
    assert window.count == 1 and window.window_end > clock.now()
    WorkflowInstance.objects.filter(pk="p-1").update(lease_until=None, lease_token=None)
    assert claim_once("review-purged") == []  # the window holds the claim: it is full


def test_a_limited_claim_reads_the_journal_of_the_previous_lease_holders_last_write(
    define, monkeypatch
):
    # The claim counts the slots, then the previous lease holder's last write commits, then
    # the claim locks the instance. Under MySQL's REPEATABLE READ a journal read inside the
    # claim's transaction would come from the snapshot of the count, without that write.
    from datetime import timedelta

    from django_workflows import Concurrency
    from django_workflows.store import instances as store
    from django_workflows.store import limits
    from django_workflows.worker.worker import limit_rules

    if connection.vendor == "sqlite":
        pytest.skip("SQLite: the claim holds the database's one write lock, the write waits")

    @define("journal-limited", concurrency=Concurrency(limit=100))
    def limited(ctx, input):
        return None

    wf.start("journal-limited", {}, id="j-1")
    assert claim_once("journal-limited") == ["j-1"]
    first_token = WorkflowInstance.objects.get(pk="j-1").lease_token
    candidates = limits._candidates
    written = []

    def last_write_meanwhile(using, **kwargs):
        def holder() -> None:
            try:
                now = clock.now()
                write = store.InstanceWrite(
                    now=now,
                    entries={"step-0": {"kind": "step", "status": "completed", "result": 1}},
                    release=store.Release(now - timedelta(seconds=1), [], 0, False),
                )
                written.append(store.write("default", "j-1", first_token, write))
            finally:
                connection.close()

        thread = threading.Thread(target=holder)
        thread.start()
        thread.join(10)
        return candidates(using, **kwargs)

    monkeypatch.setattr(limits, "_candidates", last_write_meanwhile)
    concurrency, rates = limit_rules(["journal-limited"])
    now = clock.now()
    claim = store.claim(
        "default",
        owner="b",
        token="second",
        now=now,
        lease_until=now + timedelta(minutes=5),
        limit=1,
        workflows=[("journal-limited", 1)],
        concurrency=concurrency,
        rates=rates,
    )
    assert written and written[0] is not None
    assert [i.id for i in claim.instances] == ["j-1"]
    assert [name for name, _ in claim.journals["j-1"]] == ["step-0"]
