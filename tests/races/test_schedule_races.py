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
