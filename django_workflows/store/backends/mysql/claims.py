"""MySQL's and MariaDB's claims as hand-written statements, sent in batches
(mysql/batches.py): the candidates' scans, priority by priority, and the lease with the last
signal id and the leased rows. The claim without limits is both in one transaction of two
round trips; under limits, the limits' stages in Python run between them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ....models import Signal, Status, WorkflowInstance
from ..rows import INSTANCE_COLUMNS
from . import batches as mysql_batches
from .batches import Statement

_EARLIEST = datetime(1000, 1, 1, tzinfo=UTC)  # before any wake time: the earliest DATETIME


def candidates(
    connection: Any,
    now: Any,
    limit: int,
    workflows: list[tuple[str, int]],
    where: tuple[str, list[Any]] = ("", []),
    queues: list[str] | None = None,
    begin: list[Statement] | None = None,
    selected: tuple[str, list[Any]] | None = None,
) -> list[Any]:
    """The candidates' ids, in one round trip for each priority scanned: the scans of
    priority 0, the lowest there can be, found or not (a scan of a priority without rows
    reads nothing and locks nothing), after the statements `begin` in the same batch; then,
    while the limit is not reached, the scans of the next priority with rows, all of its
    queues' ranges together. Each batch also reads each of its queues' next priority. With
    `selected` (more columns' SQL, after the id, and their parameters): the rows from the id
    on, rather than the ids."""
    table = WorkflowInstance._meta.db_table
    more, more_params = selected or ("", [])
    pairs = " OR ".join("(workflow = %s AND version = %s)" for _ in workflows)
    earliest = connection.ops.adapt_datetimefield_value(_EARLIEST)
    at = connection.ops.adapt_datetimefield_value(now)
    index, queue_sql = (
        ("dw_instance_due", "") if queues is None else ("dw_instance_queue_due", "AND queue = %s ")
    )
    # Per range two scans: the free instances (lease_until NULL, in index order: MariaDB
    # takes IS NULL as a constant for the order, but sorts all the range when lease_until
    # is in the ORDER BY), and the lapsed leases (lease_until before now, from the same
    # index's next range, sorted); the instances that run are in neither, nor the parked
    # ones (parked, 0 in both, follows the priority in the index: store/parking.py).
    leases = [
        ("parked = 0 AND lease_until IS NULL", []),
        ("parked = 0 AND lease_until >= %s AND lease_until < %s", [earliest, at]),
    ]

    def scans(priority: int, of_queues: list[str | None], room: int) -> list[Statement]:
        statements: list[Statement] = []
        for queue in of_queues:
            for lease, lease_params in leases:
                params: list[Any] = [*more_params, priority, *lease_params, earliest, at]
                if queue is not None:
                    params.append(queue)
                for name, version in workflows:
                    params += [name, version]
                statements.append(
                    (
                        f"SELECT wake_at, created_at, id{more} FROM {table} "
                        f"FORCE INDEX ({index}) "
                        f"WHERE priority = %s AND {lease} AND wake_at >= %s "
                        f"AND wake_at <= %s {queue_sql}AND ({pairs}) "
                        f"{'AND ' + where[0] if where[0] else ''} "
                        f"ORDER BY priority, wake_at, created_at, id LIMIT %s "
                        f"FOR UPDATE SKIP LOCKED",
                        [*params, *where[1], room],
                    )
                )
        return statements

    # The next priority with rows after each one scanned, of each queue, by one index dive
    # each (ORDER BY ... LIMIT 1 from a range of the index's first columns). SELECT
    # DISTINCT priority, whose loose index scan MariaDB picks only when the table's
    # statistics say there are few priorities, read every entry of the index at every
    # claim on a table grown since it was last analysed (5,000 for a claim of 5 there).
    def following(priority: int, of_queues: list[str | None]) -> list[Statement]:
        return [
            (
                f"SELECT priority FROM {table} FORCE INDEX ({index}) WHERE priority > %s "
                f"{queue_sql}ORDER BY priority LIMIT 1",
                [priority] if queue is None else [priority, queue],
            )
            for queue in of_queues
        ]

    asked: list[str | None] = list(queues) if queues is not None else [None]
    of_queues, priority, statements = asked, 0, [*(begin or []), *scans(0, asked, limit)]
    skipped = len(begin or [])
    upcoming: dict[str | None, int] = {}
    ids: list[Any] = []
    while True:
        found = mysql_batches.results(connection, statements + following(priority, of_queues))
        scanned = len(statements) - skipped
        rows = [row for rows in found[skipped : skipped + scanned] for row in rows]
        for queue, next_rows in zip(of_queues, found[skipped + scanned :], strict=True):
            if next_rows:
                upcoming[queue] = next_rows[0][0]
            else:
                upcoming.pop(queue, None)
        # One queue's range is in claim order already; several are merged (the rows left
        # over stay locked until the claim's transaction ends, and are not leased).
        rows.sort(key=lambda row: row[:3])
        ids += [row[2] if selected is None else tuple(row[2:]) for row in rows[: limit - len(ids)]]
        if len(ids) >= limit or not upcoming:
            break
        priority = min(upcoming.values())
        of_queues = [queue for queue in asked if upcoming.get(queue) == priority]
        statements, skipped = scans(priority, of_queues, limit - len(ids)), 0
    return ids


def lease_statements(
    connection: Any, ids: list[str], token: str, owner: str, now: Any, lease_until: Any
) -> list[Statement]:
    """Lease the candidates `ids` (if still due, as the other databases' claims check), then
    read the last signal id and the leased rows, in claim order."""
    table = WorkflowInstance._meta.db_table
    at = connection.ops.adapt_datetimefield_value(now)
    until = connection.ops.adapt_datetimefield_value(lease_until)
    marks = ", ".join(["%s"] * len(ids))
    return [
        (
            f"UPDATE {table} SET lease_token = %s, lease_owner = %s, lease_until = %s, "
            f"runs = runs + 1, updated_at = %s, "
            f"status = CASE WHEN status = %s THEN status ELSE %s END "
            f"WHERE id IN ({marks}) "
            f"AND wake_at <= %s AND (lease_until IS NULL OR lease_until < %s)",
            [token, owner, until, at, Status.COMPENSATING, Status.RUNNING, *ids, at, at],
        ),
        (f"SELECT COALESCE(MAX(id), 0) FROM {Signal._meta.db_table}", []),
        (
            f"SELECT {INSTANCE_COLUMNS} FROM {table} WHERE lease_token = %s "
            f"AND id IN ({marks}) ORDER BY priority, wake_at, created_at, id",
            [token, *ids],
        ),
    ]
