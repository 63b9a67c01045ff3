"""MariaDB's and MySQL's claim finds the priorities that have instances by one index dive each,
the next priority after the one it scanned, rather than by `SELECT DISTINCT priority`, whose
loose index scan the server picks only when the table's statistics say there are few
priorities: on a table grown since it was last analysed that read every entry of the claim
index, finished instances included, at every claim."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows.models import Status, WorkflowInstance
from tests.queues.test_routing import claim

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "mysql", reason="MySQL's and MariaDB's claim scans"),
]

FINISHED = 400


def index_reads() -> int:
    """The index entries this session has read so far (InnoDB handler reads)."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW SESSION STATUS LIKE 'Handler_read%%'")
        return sum(int(value) for name, value in cursor.fetchall() if name != "Handler_read_rnd")


@pytest.mark.parametrize("queues", [None, ["gpu", "batch"]], ids=["every-queue", "two-queues"])
def test_a_claim_reads_a_few_entries_past_many_finished_instances(
    define: Any, workflow_clock: Any, queues: list[str] | None
) -> None:
    @define("few-reads")
    def few_reads(ctx: Any, input: Any) -> None:
        return None

    for n in range(FINISHED):
        wf.start(
            "few-reads", id=f"done-{n}", queue="gpu" if n % 2 else "batch", priority=n % 3 or None
        )
    WorkflowInstance.objects.update(status=Status.COMPLETED, wake_at=None)
    for n, priority in enumerate([7, 2, 7]):
        wf.start("few-reads", id=f"due-{n}", queue="batch", priority=priority)
        workflow_clock.advance("1s")

    before = index_reads()
    taken = claim(["few-reads"], queues, limit=5)
    reads = index_reads() - before

    assert taken == ["due-1", "due-0", "due-2"]
    # the scans of four priorities (the default, 1, 2, 7) of each queue, the next priority after each,
    # the lease and the rows read back: a few dozen entries, not the 400 finished ones
    assert reads < FINISHED / 4, reads
