"""Limit how many run at once: the docs page's "Limit how many run at once", rule by rule.

Claims are made here as a worker makes them (store.claim with the worker's rules), so each test
can hold leases open the way running executions do.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

import django_workflows as wf
from django_workflows import Concurrency, RateLimit, clock
from django_workflows.models import RateLimitWindow, WorkflowInstance
from tests.helpers import claim_ids, end_leases, wait_until, worker_thread

pytestmark = pytest.mark.django_db


def claim(*names: str, limit: int = 10) -> list[str]:
    """One worker's claim, with the limits of the registered code; the ids it leased."""
    return claim_ids(list(names), limit=limit)


def release(id: str) -> None:
    """The execution parked or ended: its lease, and so its slot, is given back."""
    end_leases([id], wake_at=None)


def test_a_concurrency_limit_caps_how_many_run_at_once(define, workflow_clock):
    @define("capped", concurrency=Concurrency(limit=2))
    def capped(ctx, input):
        return None

    for i in range(5):
        wf.start("capped", {}, id=f"c{i}")
    assert claim("capped") == ["c0", "c1"]
    assert claim("capped") == []  # two hold their slots
    release("c0")
    assert claim("capped") == ["c2"]


def test_a_full_key_is_passed_over_so_one_customer_never_holds_back_another(define, workflow_clock):
    @define("per-customer", concurrency=Concurrency(limit=1, key=lambda order: order["user_id"]))
    def per_customer(ctx, input):
        return None

    wf.start("per-customer", {"user_id": "busy"}, id="busy-1")
    wf.start("per-customer", {"user_id": "busy"}, id="busy-2")
    wf.start("per-customer", {"user_id": "other"}, id="other-1")
    assert WorkflowInstance.objects.get(pk="busy-1").concurrency_key == "busy"
    assert claim("per-customer") == ["busy-1", "other-1"]
    assert claim("per-customer") == []
    release("busy-1")
    assert claim("per-customer") == ["busy-2"]


def test_start_can_set_another_concurrency_key(define, workflow_clock):
    @define("keyed", concurrency=Concurrency(limit=1, key=lambda input: input["k"]))
    def keyed(ctx, input):
        return None

    wf.start("keyed", {"k": "a"}, id="k1", concurrency_key="shared")
    wf.start("keyed", {"k": "b"}, id="k2", concurrency_key="shared")
    assert claim("keyed") == ["k1"]


def test_a_lease_that_expired_frees_its_slot(define, workflow_clock):
    @define("one-at-a-time", concurrency=Concurrency(limit=1))
    def one(ctx, input):
        return None

    wf.start("one-at-a-time", {}, id="o1")
    wf.start("one-at-a-time", {}, id="o2")
    assert claim("one-at-a-time") == ["o1"]
    workflow_clock.advance("31s")  # its process crashed: the lease ran out, and the slot with it
    assert claim("one-at-a-time") == ["o1"]  # due again, first in claim order, in the free slot
    assert claim("one-at-a-time") == []
    live = WorkflowInstance.objects.filter(lease_until__gte=clock.now())
    assert list(live.values_list("id", flat=True)) == ["o1"]


def test_a_rate_limit_admits_max_claims_per_window(define, workflow_clock):
    @define("rated", rate_limit=RateLimit(max=2, duration="1s"))
    def rated(ctx, input):
        return None

    for i in range(5):
        wf.start("rated", {}, id=f"r{i}")
    assert claim("rated") == ["r0", "r1"]
    release("r0")
    release("r1")
    assert claim("rated") == []  # the window is full, whatever runs
    workflow_clock.advance("1s")
    assert claim("rated") == ["r2", "r3"]
    window = RateLimitWindow.objects.get(workflow="rated", scope="workflow")
    assert (window.count, window.window_end) == (2, clock.now() + timedelta(seconds=1))


def test_a_rate_limit_per_key(define, workflow_clock):
    @define("rated-key", rate_limit=RateLimit(max=1, duration="1m", key=lambda i: i["tenant"]))
    def rated(ctx, input):
        return None

    for i, tenant in enumerate(["a", "a", "b"]):
        wf.start("rated-key", {"tenant": tenant}, id=f"t{i}")
    assert claim("rated-key") == ["t0", "t2"]
    release("t0")
    release("t2")
    assert claim("rated-key") == []  # tenant a's window is full
    workflow_clock.advance("1m")
    assert claim("rated-key") == ["t1"]


def test_every_execution_counts_toward_the_rate_limit(define, workflow_clock):
    @define("napper", rate_limit=RateLimit(max=1, duration="1h"))
    def napper(ctx, input):
        ctx.sleep("nap", "1m")

    wf.start("napper", {}, id="nap")
    assert wf.drain() == 1  # the first execution took the window
    workflow_clock.advance("1m")
    assert wf.drain() == 0  # the resumption waits for the next window: drain stops
    assert wf.get_status("nap").status == "suspended"
    workflow_clock.advance("1h")
    assert wf.drain() == 1
    assert wf.get_status("nap").status == "completed"


def test_limits_combine_and_priorities_decide_who_goes_first(define, workflow_clock):
    @define(
        "combined",
        concurrency=[Concurrency(limit=3), Concurrency(limit=1, key=lambda i: i["user"])],
        rate_limit=RateLimit(max=2, duration="1s"),
    )
    def combined(ctx, input):
        return None

    wf.start("combined", {"user": "u1"}, id="standard", priority=2)
    wf.start("combined", {"user": "u1"}, id="express-u1", priority=1)
    wf.start("combined", {"user": "u2"}, id="express-u2", priority=1)
    wf.start("combined", {"user": "u3"}, id="later", priority=3)
    assert claim("combined") == ["express-u1", "express-u2"]  # the window admits two
    workflow_clock.advance("1s")
    assert claim("combined") == ["later"]  # u1 is full; 3 slots: two held, one left


def test_limits_come_from_the_highest_registered_version(define, workflow_clock):
    @define("versioned-limit", version=1, concurrency=Concurrency(limit=5))
    def v1(ctx, input):
        return None

    @define("versioned-limit", version=2, concurrency=Concurrency(limit=1))
    def v2(ctx, input):
        return None

    wf.start("versioned-limit", {}, id="old", version=1)
    wf.start("versioned-limit", {}, id="new", version=2)
    assert len(claim("versioned-limit")) == 1


def test_a_workflow_without_limits_is_claimed_as_before(workflow_clock):
    for i in range(3):
        wf.start("recorded-steps", {"steps": 1}, id=f"free-{i}")
    assert claim("recorded-steps") == ["free-0", "free-1", "free-2"]


def test_limits_validate_their_arguments():
    with pytest.raises(ValueError, match="limit"):
        Concurrency(limit=0)
    with pytest.raises(ValueError, match="max"):
        RateLimit(max=0, duration="1s")
    with pytest.raises(ValueError, match="duration"):
        RateLimit(max=1, duration="soon")
    with pytest.raises(ValueError, match="at most one"):
        wf.workflow("two-keyless", concurrency=[Concurrency(1), Concurrency(2)])


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_never_runs_two_orders_of_one_customer_at_once(define):
    import threading
    import time

    spans: list[tuple[str, float, float]] = []
    lock = threading.Lock()

    def charge(user: str) -> None:
        began = time.monotonic()
        time.sleep(0.05)
        with lock:
            spans.append((user, began, time.monotonic()))

    @define("charge-per-customer", concurrency=Concurrency(limit=1, key=lambda o: o["user"]))
    def per_customer(ctx, order):
        ctx.step("charge", lambda step: charge(order["user"]))

    ids = [
        wf.start("charge-per-customer", {"user": f"u{u}"}, id=f"o-{u}-{n}").id
        for u in range(3)
        for n in range(4)
    ]

    def all_completed() -> bool:
        done = WorkflowInstance.objects.filter(id__in=ids, status="completed").count()
        return done == len(ids)

    with worker_thread(concurrency=6, poll_interval="50ms"):
        wait_until(all_completed, 30)
    assert WorkflowInstance.objects.filter(id__in=ids, status="completed").count() == len(ids)
    for user in ("u0", "u1", "u2"):
        mine = sorted((b, e) for u, b, e in spans if u == user)
        assert len(mine) == 4
        assert all(prev[1] <= nxt[0] for prev, nxt in zip(mine, mine[1:], strict=False)), mine
    # and different customers did run at once
    assert any(b1 < e2 and b2 < e1 for u1, b1, e1 in spans for u2, b2, e2 in spans if u1 != u2)
