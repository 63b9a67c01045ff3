"""purge() deletes the registry rows of workers gone for more than a day, and only those."""

from __future__ import annotations

from datetime import timedelta

import pytest

import django_workflows as wf
from django_workflows.models import WorkerProcess
from tests.workers.helpers import register

pytestmark = pytest.mark.django_db


def test_purge_deletes_workers_gone_for_more_than_a_day(workflow_clock):
    now = workflow_clock.now()
    # Gone at now - 1 day - 1 s (last seen 3 heartbeats earlier): purged.
    register("long-gone", heartbeat=1.0, seen=now - timedelta(days=1, seconds=4))
    # Gone at now - 1 day + 1 s: gone, but not for a day yet.
    register("lately-gone", heartbeat=1.0, seen=now - timedelta(days=1, seconds=2))
    # Last seen more than a day ago, but its heartbeat is long: gone for less than a day.
    register("slow", heartbeat=3600.0, seen=now - timedelta(hours=25))
    register("live", heartbeat=1.0)
    result = wf.purge(older_than="30d")
    assert result.workers == 1
    assert sorted(WorkerProcess.objects.values_list("id", flat=True)) == [
        "lately-gone",
        "live",
        "slow",
    ]
    workflow_clock.advance("2s")
    assert wf.purge(older_than="30d").workers == 1
    assert not WorkerProcess.objects.filter(pk="lately-gone").exists()
