"""Keyed starts from many threads at once: each takes a turn (a read of the line's front and of
its key's latest), none is lost, and every instance is due and claimed once."""

from __future__ import annotations

import pytest
from django.db import transaction

import django_workflows as wf
from django_workflows import clock
from django_workflows.models import WorkflowInstance
from tests.helpers import claim_ids

from .conftest import race, threads_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_concurrent_keyed_starts_are_all_due_and_each_claimed_once(define):
    @define("race-tenant-job", fair_key=lambda input: input["tenant"])
    def job(ctx, input):
        return input

    threads = threads_for(8, 3)

    def starter(n: int):
        def start():
            ids = []
            for i in range(20):
                with transaction.atomic():
                    id = f"t{n}-{i}"
                    wf.start("race-tenant-job", {"tenant": f"k{(n + i) % 4}"}, id=id)
                    ids.append(id)
            return ids

        return start

    started = [id for ids in race([starter(n) for n in range(threads)]) for id in ids]
    rows = WorkflowInstance.objects.filter(workflow="race-tenant-job")
    assert rows.count() == len(started) == threads * 20
    now = clock.now()
    assert all(row.wake_at <= now for row in rows)
    claimed: list[str] = []
    while got := claim_ids(["race-tenant-job"], limit=25, lease="5m"):
        claimed += got
    assert sorted(claimed) == sorted(started)
