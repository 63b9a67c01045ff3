"""Schedule races with real threads (store contract: claimSchedules, saveSchedule, writeSchedule)."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection

from django_workflows import clock
from django_workflows.models import WorkflowSchedule
from django_workflows.store import schedules as store

from .conftest import race, threads_for

pytestmark = pytest.mark.django_db(transaction=True)


def save(id: str, *, expect: int | None, cron: str = "0 * * * *") -> WorkflowSchedule | None:
    now = clock.now()
    return store.save_schedule(
        "default",
        store.ScheduleSave(
            id=id,
            workflow="recorded-steps",
            version=None,
            declared=False,
            spec={"timing": {"cron": cron}},
            input=None,
            paused=False,
            wake_at=now - timedelta(seconds=1),
            state={"cursor": now.isoformat()},
            expect_revision=expect,
            release_lease=True,
            now=now,
        ),
    )


def test_concurrent_schedule_claims_never_lease_one_schedule_twice():
    count = 100 if connection.vendor != "sqlite" else 30
    ids = {f"sched-{i}" for i in range(count)}
    for id in ids:
        save(id, expect=None)
    claimers = threads_for(server=8, sqlite=3)

    def claim_all() -> list[tuple[str, str]]:
        got = []
        while True:
            token = uuid.uuid4().hex
            now = clock.now()
            claimed = store.claim_schedules(
                "default",
                owner=threading.current_thread().name,
                token=token,
                now=now,
                lease_until=now + timedelta(minutes=5),
                limit=3,
                workflows=["recorded-steps"],
            )
            if not claimed:
                return got
            assert all(s.lease_token == token for s in claimed)
            got.extend((s.pk, token) for s in claimed)

    results = race([claim_all] * claimers)
    claimed = [id for result in results for id, _ in result]
    duplicates = [id for id, n in Counter(claimed).items() if n > 1]
    assert not duplicates, f"leased twice: {duplicates[:10]}"
    assert set(claimed) == ids
    tokens = dict(WorkflowSchedule.objects.filter(pk__in=ids).values_list("id", "lease_token"))
    assert tokens == {id: token for result in results for id, token in result}
    # only the lease holder's write lands
    id, token = results[0][0] if results[0] else next(r[0] for r in results if r)
    now = clock.now()
    assert not store.write_schedule(
        "default", id, "someone-else", now=now, state={}, wake_at=None, release=True
    )
    assert store.write_schedule("default", id, token, now=now, state={}, wake_at=None, release=True)
    assert WorkflowSchedule.objects.get(pk=id).lease_token is None


def test_of_concurrent_saves_expecting_one_revision_one_lands():
    first = save("contested", expect=None)
    assert first is not None and first.revision == 1
    savers = threads_for(server=8, sqlite=3)
    results = race(
        [lambda i=i: save("contested", expect=1, cron=f"{i} * * * *") for i in range(savers)]
    )
    landed = [r for r in results if r is not None]
    assert len(landed) == 1
    stored = WorkflowSchedule.objects.get(pk="contested")
    assert stored.revision == 2 and stored.spec == landed[0].spec


def test_of_concurrent_inserts_of_one_id_one_lands():
    inserters = threads_for(server=8, sqlite=3)
    results = race([lambda: save("new-one", expect=None)] * inserters)
    assert sum(r is not None for r in results) == 1
    assert WorkflowSchedule.objects.filter(pk="new-one").count() == 1


def test_a_delete_of_one_revision_keeps_the_revision_saved_meanwhile():
    # A project-wide pre_delete receiver (an audit log, say) turns QuerySet.delete() into a
    # SELECT, then a DELETE by primary key alone; another process's save lands in between.
    from django.db.models.signals import pre_delete

    save("s1", expect=None)
    saved: list[WorkflowSchedule | None] = []

    def audit(sender, **kwargs):
        if sender is WorkflowSchedule and not saved:

            def other() -> None:
                try:
                    saved.append(save("s1", expect=1, cron="5 * * * *"))
                finally:
                    connection.close()

            thread = threading.Thread(target=other)
            thread.start()
            thread.join(5)

    pre_delete.connect(audit)
    try:
        deleted = store.delete_schedule("default", "s1", 1)
    finally:
        pre_delete.disconnect(audit)
    # One conditional DELETE: no window for the save (the receiver is not even called), and
    # revision 1 is what it deleted. Before, the save landed and revision 2 was deleted.
    assert (deleted, saved) == (True, [])
    assert not WorkflowSchedule.objects.filter(pk="s1").exists()
    save("s1", expect=None)
    save("s1", expect=1)
    assert store.delete_schedule("default", "s1", 1) is False  # revision 2 stays
    assert WorkflowSchedule.objects.get(pk="s1").revision == 2
