"""The generic backend (store.backends.base.Backend), the one a database without a backend of
its own gets: its claim and its lease holder's write, each whole by the ORM, on every database
the tests run on."""

from __future__ import annotations

from datetime import timedelta

import pytest

from django_workflows import clock
from django_workflows.models import JournalEntry, Signal, Wait, WorkflowInstance
from django_workflows.store import instances as store
from django_workflows.store.backends.base import Backend
from django_workflows.store.backends.writes import ClaimRequest

pytestmark = pytest.mark.django_db(transaction=True)


def due(id: str, *, priority: int = 0, ago: int = 10, workflow: str = "w") -> WorkflowInstance:
    now = clock.now()
    return WorkflowInstance.objects.create(
        id=id,
        workflow=workflow,
        version=1,
        status="pending",
        priority=priority,
        wake_at=now - timedelta(seconds=ago),
        created_at=now,
        updated_at=now,
    )


def claim(generic: Backend, limit: int = 10, **more):
    now = clock.now()
    pick = more.pop("pick", None)
    request = ClaimRequest(
        owner="a worker",
        token=more.pop("token", "t-1"),
        now=now,
        lease_until=now + timedelta(minutes=5),
        limit=limit,
        workflows=[("w", 1)],
        **more,
    )
    return generic.claim(request, pick)


def test_the_generic_claim_leases_the_due_instances_in_claim_order():
    generic = Backend("default")
    due("overdue", priority=1, ago=30)
    due("recent", priority=1, ago=1)
    due("urgent", priority=0, ago=1)
    due("other", workflow="x")
    Signal.objects.create(name="s", created_at=clock.now())
    claimed, last = claim(generic)
    assert [i.id for i in claimed] == ["urgent", "overdue", "recent"]
    assert last == Signal.objects.get().id
    assert {(i.lease_token, i.status, i.runs) for i in claimed} == {("t-1", "running", 1)}
    assert claim(generic, token="t-2") == ([], 0)


def test_the_generic_claim_under_limits_leases_what_the_pick_chose():
    generic = Backend("default")
    due("a")
    due("b")
    claimed, _ = claim(generic, pick=lambda: ["b"])
    assert [i.id for i in claimed] == ["b"]
    assert WorkflowInstance.objects.get(pk="a").lease_token is None


def test_the_generic_write_writes_only_while_the_token_is_the_lease_token():
    generic = Backend("default")
    due("w-1")
    claim(generic)
    now = clock.now()
    write = store.InstanceWrite(
        now=now,
        entries={"charge": {"kind": "step", "status": "completed", "result": 1}},
        release=store.Release(None, [("paid", None)], 0, had_waits=False),
        changes={"status": "suspended"},
    )
    assert generic.write("w-1", "another-token", write) is None
    assert not JournalEntry.objects.exists()
    written = generic.write("w-1", "t-1", write)
    assert written is not None
    assert (written.cancel_requested, written.terminate_requested, written.rode) == (
        False,
        False,
        None,
    )
    row = WorkflowInstance.objects.get(pk="w-1")
    assert (row.status, row.lease_token, row.wake_at) == ("suspended", None, None)
    assert list(Wait.objects.values_list("signal", "key")) == [("paid", None)]
    assert JournalEntry.objects.get().name == "charge"
