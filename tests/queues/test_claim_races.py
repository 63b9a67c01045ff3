"""Concurrent claims of overlapping queue sets: every instance is leased once, each claimer
gets only its queues' instances, and together they lease them all (real threads, each on its
own connection)."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows import clock
from django_workflows.engine.registry import registry
from django_workflows.models import WorkflowInstance
from django_workflows.store import instances as store
from tests.races.conftest import race

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE_SETS = [["a", "b"], ["b", "c"], ["a"], ["c", "a", "b"], None, ["b"]]


def test_concurrent_claims_of_overlapping_queues_lease_each_instance_once(define):
    @define("raced-queues")
    def raced(ctx, input):
        return None

    count = 150 if connection.vendor != "sqlite" else 45
    queue_of = {}
    for n in range(count):
        id = f"r{n}"
        queue_of[id] = "abc"[n % 3]
        wf.start("raced-queues", id=id, queue=queue_of[id], priority=n % 4 or None)
    workflows = registry.pairs(["raced-queues"])

    def claimer(queues: list[str] | None):
        def claim_all() -> list[str]:
            got: list[str] = []
            while True:
                now = clock.now()
                claim = store.claim(
                    "default",
                    owner="racer",
                    token=uuid.uuid4().hex,
                    now=now,
                    lease_until=now + timedelta(minutes=5),
                    limit=4,
                    workflows=workflows,
                    queues=queues,
                )
                if not claim.instances:
                    return got
                got += [i.id for i in claim.instances]

        return claim_all

    results = race([claimer(queues) for queues in QUEUE_SETS])
    claimed = [id for result in results for id in result]
    twice = [id for id, n in Counter(claimed).items() if n > 1]
    assert not twice, f"leased twice: {twice[:10]}"
    assert set(claimed) == set(queue_of)
    for queues, result in zip(QUEUE_SETS, results, strict=True):
        if queues is not None:
            assert {queue_of[id] for id in result} <= set(queues), (queues, result)
    assert set(WorkflowInstance.objects.values_list("runs", flat=True)) == {1}
