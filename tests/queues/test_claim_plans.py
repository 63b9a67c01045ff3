"""A claim reads its first due rows in index order. On PostgreSQL whatever the planner's statistics
say. They said that few instances were due after a burst of starts that no ANALYZE had seen yet
(or on a new table), and then every claim read every due row and sorted them (the claim index
ended at created_at, the claim's order at the id), and read the lapsed leases
by dw_instance_workflow, every instance of the claimed workflows (now only once the earliest
lease end says one lapsed). A claim of one queue reads that queue's own claim index, never
dw_instance_due, which the planner would otherwise pick as the smaller. On SQLite the claim index
held lease_until (NULL throughout) after the priority, and SQLite read the claim's order from it
only up to that column: it sorted every due row for the rest; and it read a claim under limits,
then the ORM's, by dw_instance_workflow, every instance the workflow ever had."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction

import django_workflows as wf
from django_workflows import clock
from django_workflows.engine.registry import registry
from django_workflows.models import Status, WorkflowInstance
from django_workflows.store import instances as store
from django_workflows.store.backends.writes import ClaimRequest
from django_workflows.store.limits import ConcurrencyRule

pytestmark = pytest.mark.django_db(transaction=True)

DUE = 300
LIMIT = 5
CLAIM_INDEXES = ("dw_instance_due", "dw_instance_queue_due")


@pytest.fixture
def burst(define: Any) -> None:
    """The workflow "burst", whose instances the tests start and claim."""

    @define("burst")
    def burst(ctx: Any, input: Any) -> None:
        return None


def starts(prefix: str) -> None:
    """DUE starts of "burst" in the queue "batch", in one transaction, as `<prefix>-000`,
    `<prefix>-001`, ..."""
    with transaction.atomic():
        for n in range(DUE):
            wf.start("burst", id=f"{prefix}-{n:03d}", queue="batch")


def nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every node of an EXPLAIN (FORMAT JSON) plan, `plan` and those below it."""
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def a_claim() -> dict[str, Any]:
    """The arguments of a claim of LIMIT instances of "burst", now."""
    now = clock.now()
    return {
        "owner": "planner",
        "token": uuid.uuid4().hex,
        "now": now,
        "lease_until": now + timedelta(minutes=5),
        "limit": LIMIT,
        "workflows": registry.pairs(["burst"]),
    }


def claim_plan(queues: list[str] | None) -> list[dict[str, Any]]:
    """The nodes of the plan of the worker's claim (EXPLAIN ANALYZE, rolled back)."""
    from django_workflows.store.backends.postgresql import claims as postgresql_claims

    sql, params = postgresql_claims.claim_sql(ClaimRequest(**a_claim(), queues=queues))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
        (document,) = cursor.fetchone()
        transaction.set_rollback(True)
    plan = (json.loads(document) if isinstance(document, str) else document)[0]["Plan"]
    return list(nodes(plan))


def sqlite_claim_plans(prefix: str, **limits: Any) -> list[list[tuple[int, int, str]]]:
    """Claim LIMIT instances of "burst" (checking they are the first due ones) and return the
    plan (node, parent, detail) of each statement the claim ran that starts with `prefix`."""
    selects: list[tuple[str, Any]] = []

    def capture(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if sql.startswith(prefix):
            selects.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        claimed = store.claim("default", **a_claim(), **limits)
    assert [i.id for i in claimed.instances] == [f"due-{n:03d}" for n in range(LIMIT)]
    plans = []
    with connection.cursor() as cursor:
        for sql, params in selects:
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
            plans.append([(node, parent, detail) for node, parent, _, detail in cursor.fetchall()])
    return plans


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL's planner and its statistics"
)
@pytest.mark.parametrize(
    "queues, index",
    [(None, "dw_instance_due"), (["batch"], "dw_instance_queue_due")],
    ids=["every-queue", "one-queue"],
)
def test_a_claim_after_a_burst_of_starts_reads_a_few_due_rows(
    burst: None, queues: list[str] | None, index: str
) -> None:
    starts("done")
    WorkflowInstance.objects.update(status=Status.COMPLETED, wake_at=None)
    with connection.cursor() as cursor:  # statistics that know of no due instance
        cursor.execute(f"ANALYZE {WorkflowInstance._meta.db_table}")
    starts("due")

    plan = claim_plan(queues)

    # One queue's range by its own index: dw_instance_due would hold every queue's instances.
    scans = [node for node in plan if node.get("Index Name") in CLAIM_INDEXES]
    assert [node["Index Name"] for node in scans] == [index]
    assert all(node["Actual Rows"] <= LIMIT for node in scans), [
        (node["Node Type"], node["Actual Rows"]) for node in scans
    ]
    # No lease lapsed: the lapsed range is never read, by any index.
    lapsed = [
        node
        for node in plan
        if node.get("Index Name") in ("dw_instance_workflow", "dw_instance_leased")
        and node["Node Type"] != "Index Only Scan"  # the earliest lease end, one entry
    ]
    assert all(node["Actual Loops"] == 0 for node in lapsed), [
        (node["Node Type"], node.get("Index Name"), node["Actual Loops"]) for node in lapsed
    ]
    rows = WorkflowInstance.objects.filter(wake_at__isnull=False).count()
    assert rows == DUE  # the claim's lease was rolled back


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL's planner and its statistics"
)
@pytest.mark.parametrize(
    "queue, index", [(None, "dw_instance_due"), ("batch", "dw_instance_queue_due")]
)
def test_a_rides_generic_plan_reads_the_claim_index_in_order(
    burst: None, queue: str | None, index: str
) -> None:
    # dw_final_write_ride_v2's pick of the next due instance runs from PL/pgSQL's cached plan,
    # which PostgreSQL makes generic, for any time and any workflows: that plan reads the
    # claim index in the claim's order too, and stops at the first row.
    from django_workflows.store.backends import routines

    # the function's two picks, as its file has them: of every queue, then of one
    ride = routines.text("postgresql/sql/dw_final_write_ride_v2.sql")
    picks = re.findall(r"WITH picked AS MATERIALIZED \((SELECT id FROM .*? SKIP LOCKED)\)", ride)
    assert len(picks) == 2 and ("queue = $12" in picks[1]) and ("queue" not in picks[0])

    starts("due")
    with connection.cursor() as cursor:  # statistics of this table, not of an earlier test's
        cursor.execute(f"ANALYZE {WorkflowInstance._meta.db_table}")
    types = (
        "text, text, jsonb, text, jsonb, jsonb, timestamptz, text, text, timestamptz, text[], text"
    )
    # the time ($7), the workflows ($11) and the queue ($12) written in (EXPLAIN EXECUTE's
    # arguments take no parameters of their own under server-side binding); the rest NULL
    queue_text = "NULL" if queue is None else f"'{queue}'"
    execute = (
        f"EXECUTE ride_pick (NULL, NULL, NULL, NULL, NULL, NULL, '{clock.now().isoformat()}', "
        f"NULL, NULL, NULL, '{{burst:1}}', {queue_text})"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute(f"PREPARE ride_pick ({types}) AS {picks[queue is not None]}")
        try:
            cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {execute}")
            (document,) = cursor.fetchone()
        finally:
            cursor.execute("DEALLOCATE ride_pick")
        transaction.set_rollback(True)
    plan = list(nodes((json.loads(document) if isinstance(document, str) else document)[0]["Plan"]))
    assert not any(node["Node Type"] == "Sort" for node in plan)
    scans = [node for node in plan if "Index Name" in node]
    assert [(node["Index Name"], node["Actual Rows"]) for node in scans] == [(index, 1)]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's own claim statement")
def test_sqlite_reads_the_claim_order_from_the_claim_index(burst: None) -> None:
    starts("due")

    (plan,) = sqlite_claim_plans("SELECT id FROM (")  # the claim's candidates
    # The free range's subquery: the scan of dw_instance_due and no sort beside it (the lapsed
    # range's and the merge's sort their few rows).
    (free,) = [parent for _, parent, detail in plan if "USING INDEX dw_instance_due" in detail]
    beside = [detail for _, parent, detail in plan if parent == free]
    assert not [detail for detail in beside if "TEMP B-TREE" in detail], plan


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's own claim statement")
def test_sqlite_reads_a_claim_under_limits_from_the_claim_index(burst: None) -> None:
    # Without statistics SQLite read the ORM's `workflow = ? AND version = ?` by
    # dw_instance_workflow, every instance the workflow ever had, finished ones included.
    starts("done")
    WorkflowInstance.objects.update(status=Status.COMPLETED, wake_at=None)
    starts("due")

    plans = sqlite_claim_plans(
        "SELECT id, workflow, concurrency_key",  # the candidates' scans
        concurrency={"burst": ConcurrencyRule(per_key=1)},
    )
    assert plans  # (no lease lapsed: the free range's scan alone)
    for plan in plans:
        steps = [detail for _, _, detail in plan]
        assert any("USING INDEX dw_instance_due" in step for step in steps), steps
        assert not [step for step in steps if "dw_instance_workflow" in step], steps
        assert not [step for step in steps if "TEMP B-TREE" in step], steps
