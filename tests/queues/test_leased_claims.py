"""The instances that run are not in the claim index's range (issue 15, "Claims while many
instances run"): a claim reads the free due instances and the lapsed leases apart and merges
them, on every claim path (PostgreSQL's statement, MariaDB's scans, SQLite's, under limits),
of every queue, one or several. It never takes a live lease, and a lapsed lease keeps its
place in claim order."""

from __future__ import annotations

from datetime import timedelta

import pytest

import django_workflows as wf
from django_workflows import Concurrency, RateLimit, clock
from django_workflows.models import DueIndex, Status, WorkflowInstance
from django_workflows.store.backends import backend
from tests.queues.test_routing import claim

pytestmark = pytest.mark.django_db(transaction=True)

LIMITS = {
    "fast-path": {},
    "concurrency": {"concurrency": Concurrency(limit=100)},
    "rate": {"rate_limit": RateLimit(max=100, duration="1m")},
}
QUEUES = {"every-queue": None, "one-queue": ["gpu"], "two-queues": ["gpu", "batch"]}


def lease(id: str, *, lapsed: bool) -> None:
    """Lease `id` to another worker, its lease live or lapsed a second ago."""
    until = clock.now() + (timedelta(seconds=-1) if lapsed else timedelta(minutes=5))
    WorkflowInstance.objects.filter(pk=id).update(
        status=Status.RUNNING, lease_token="elsewhere", lease_owner="elsewhere", lease_until=until
    )


@pytest.mark.parametrize("queues", QUEUES.values(), ids=QUEUES.keys())
@pytest.mark.parametrize("options", LIMITS.values(), ids=LIMITS.keys())
def test_a_claim_passes_over_live_leases_and_takes_lapsed_ones_in_claim_order(
    define, workflow_clock, options, queues
):
    @define("leased", **options)
    def leased(ctx, input):
        return None

    # Due one second apart, the most overdue first: live, lapsed, free, lapsed, free, live.
    for id in ("live-1", "lapsed-1", "free-1", "lapsed-2", "free-2", "live-2"):
        wf.start("leased", id=id, queue="gpu")
        workflow_clock.advance("1s")
    wf.start("leased", id="elsewhere", queue="slow-api")
    for id in ("live-1", "live-2"):
        lease(id, lapsed=False)
    for id in ("lapsed-1", "lapsed-2"):
        lease(id, lapsed=True)
    taken = claim(["leased"], queues, limit=3)
    assert taken == ["lapsed-1", "free-1", "lapsed-2"]
    left = claim(["leased"], queues)
    assert left == ["free-2"] + ([] if queues else ["elsewhere"])
    assert claim(["leased"], queues) == []
    held = WorkflowInstance.objects.filter(pk__in=["live-1", "live-2"])
    assert set(held.values_list("lease_token", flat=True)) == {"elsewhere"}


@pytest.mark.parametrize("options", LIMITS.values(), ids=LIMITS.keys())
def test_a_claim_of_several_priorities_merges_free_and_lapsed_by_priority(
    define, workflow_clock, options
):
    @define("prioritized", **options)
    def prioritized(ctx, input):
        return None

    for id, priority in (("free-p2", 2), ("lapsed-p1", 1), ("free-p1", 1), ("lapsed-p0", None)):
        wf.start("prioritized", id=id, priority=priority)
        workflow_clock.advance("1s")
    wf.start("prioritized", id="live-p0")
    workflow_clock.advance("1s")
    lease("lapsed-p1", lapsed=True)
    lease("lapsed-p0", lapsed=True)
    lease("live-p0", lapsed=False)
    assert claim(["prioritized"], None) == ["lapsed-p0", "lapsed-p1", "free-p1", "free-p2"]


def test_the_admins_queue_filter_lists_a_queue_whose_instances_all_run(define, workflow_clock):
    @define("listed")
    def listed(ctx, input):
        return None

    wf.start("listed", id="running", queue="busy")
    wf.start("listed", id="waiting", queue="idle")
    lease("running", lapsed=False)
    assert backend("default").listed_queues(100) == ["busy", "idle"]


def test_a_claim_index_of_an_unknown_lease_kind_is_refused():
    with pytest.raises(ValueError, match="DueIndex lease must be 'any', 'free' or 'held'"):
        DueIndex(fields=["wake_at"], name="dw_wrong", lease="live")
