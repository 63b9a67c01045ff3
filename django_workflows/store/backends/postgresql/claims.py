"""PostgreSQL's claims as hand-written statements: the due ranges each claim reads, the claim
without limits in one statement, and under limits the candidates' scan and the lease in one
statement each (between them, the limits' stages in Python).

Last, the claim that rides on an instance's last write (store.backends.writes.Ride):
`dw_final_write_ride_v2` (the frozen file `sql/dw_final_write_ride_v2.sql`, created by
migration 0006_ride_routine; a changed function is a new file, `_v3`, and a new migration) writes
what `dw_final_write_v1` writes (postgresql/writes.py) and then, if that write landed, leases
the next due instance of the ride's workflows (of every queue, or of one) to the ride's owner,
as a claim without limits would: in claim order, `FOR UPDATE SKIP LOCKED` (never an instance
another claim holds), with the last signal id. While a lease of a due instance has lapsed it
leases nothing: those go to the loop's claims, which read the lapsed range (due_ranges) and
would otherwise wait behind a busy worker's rides. One call, one transaction: a busy worker's
releases feed its pool threads, and its loop claims only once a release found nothing.

As a function, its statements are planned once per session, as dw_final_write_v1's are. The
same claim riding in the write's statement itself made the server plan the larger statement
at every release, which cost more than the claims it saved.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from ....models import Signal, Status, WorkflowInstance
from .. import driver
from ..rows import INSTANCE_COLUMNS, InstanceRows
from ..writes import ClaimRequest, Routines
from .libpq import BOOLEAN, TEXT
from .writes import FLAGS, callable_functions

LEASE_CLASS = 0x4457574C  # "DWWL": (LEASE_CLASS, hashtext(instance id)), see await_row_lock

_RETURNED = ", ".join(f"i.{column}" for column in INSTANCE_COLUMNS.split(", "))

ORDER = "ORDER BY priority, wake_at, created_at, id"
# One queue's free range, in the order of dw_instance_queue_due (parked, false throughout, after
# the priority): only that index gives it without a sort, so the planner never reads a queue's
# range from dw_instance_due, every queue's instances (as it would, that index being the
# smaller, while its statistics say that few instances are due). The free ranges' indexes hold
# no lease_until (NULL throughout): see indexes.DueIndex.
QUEUE_FREE_ORDER = "ORDER BY priority, parked, wake_at, created_at, id"
# The earliest lease end of a due instance: one look at dw_instance_leased (min() read from the
# index's first entry). A claim reads the lapsed range only once this says there is one, and so
# never by any other index: while the statistics know nothing of the table, the planner would
# read the lapsed range by dw_instance_workflow, every instance of the claimed workflows.
ANY_LAPSED = (
    f"(SELECT min(lease_until) FROM {WorkflowInstance._meta.db_table} WHERE wake_at IS NOT NULL)"
)


def due_ranges(
    *,
    columns: str,
    now: Any,
    limit: int,
    workflows: list[tuple[str, int]],
    queues: list[str] | None,
    where: tuple[str, list[Any]] = ("", []),
    flag: tuple[str, list[Any]] | None = None,
) -> tuple[str, list[Any]]:
    """`WITH ..., picked AS (...)`: the first `limit` due instances in claim order, locked FOR
    UPDATE SKIP LOCKED, as `columns` (`id` among them) and their order's columns.

    Every queue: one range of the claim index (dw_instance_due, which holds no leased and no
    parked instance, in the claim's order to the id), read in index order, and the lapsed
    leases (dw_instance_leased, few, sorted). One queue: the same on the queue's claim index
    (dw_instance_queue_due). Several: the database cannot read several ranges of an index in
    one order (an IN list on its first column gives rows sorted by queue first), so each
    queue's first `limit` are picked from its own ranges and the first `limit` of those kept;
    the others' row locks end with the transaction. The lapsed range is read only when the
    earliest lease end of a due instance has passed (ANY_LAPSED). A lapsed lease whose
    renewal holds its lease lock (lapsed_lease_free) is passed over after the lapsed range's
    first `limit` are read, so the try-lock runs for those only. `where`: a condition more (the
    limits' full workflows and keys) and its parameters; `flag`: a boolean expression (and its
    parameters) selected as `full_key`."""
    table = WorkflowInstance._meta.db_table
    pairs = " OR ".join("(workflow = %s AND version = %s)" for _ in workflows)
    flagged = f", {flag[0]} AS full_key" if flag else ""
    selected = f"{columns}{flagged}, priority, wake_at, created_at"
    condition = f"AND {where[0]} " if where[0] else ""
    parts: list[str] = []
    params: list[Any] = []
    branches: list[str] = []
    for n, queue in enumerate(queues or [None]):
        for name, lapsed in ((f"f{n}", False), (f"l{n}", True)):
            lease, order = (
                (f"lease_until < %s AND {ANY_LAPSED} < %s", ORDER)
                if lapsed
                else (
                    "lease_until IS NULL AND NOT parked",
                    ORDER if queue is None else QUEUE_FREE_ORDER,
                )
            )
            params += flag[1] if flag else []
            params += [now, now, now] if lapsed else [now]
            if queue is not None:
                params.append(queue)
            for workflow, version in workflows:
                params += [workflow, version]
            params += [*where[1], limit]
            parts.append(
                f"{name} AS (SELECT {selected} FROM {table} "
                f"WHERE wake_at <= %s AND {lease} "
                f"{'' if queue is None else 'AND queue = %s '}AND ({pairs}) {condition}"
                f"{order} LIMIT %s FOR UPDATE SKIP LOCKED)"
            )
        branches.append(f"SELECT * FROM f{n}")
        branches.append(f"SELECT * FROM l{n} WHERE pg_try_advisory_xact_lock(%s, hashtext(id))")
    params += [LEASE_CLASS] * len(branches[1::2])  # see lapsed_lease_free
    merged = " UNION ALL ".join(branches)
    parts.append(f"picked AS (SELECT * FROM ({merged}) AS c {ORDER} LIMIT %s)")
    params.append(limit)
    return f"WITH {', '.join(parts)} ", params


def lease_sql(
    picked: str, *, token: str, owner: str, lease_until: Any, now: Any
) -> tuple[str, list[Any]]:
    """`UPDATE ...`: lease the instances of `picked` (a FROM item with an `id` column) and
    return their rows, each with the last signal id (of the statement's snapshot: a signal
    committed after it has a higher id, and the release's check for signals above the cursor
    catches it)."""
    sql = (
        lease_update(picked, "%s", "%s", "%s", "%s", ("%s", "%s"))
        + f"RETURNING {_RETURNED}, {LAST_SIGNAL_ID} AS last_signal_id"
    )
    return sql, [token, owner, lease_until, now, Status.COMPENSATING, Status.RUNNING]


LAST_SIGNAL_ID = f"(SELECT COALESCE(MAX(id), 0) FROM {Signal._meta.db_table})"


def lease_update(
    picked: str, token: str, owner: str, lease_until: str, now: str, statuses: tuple[str, str]
) -> str:
    """`UPDATE ... FROM picked WHERE ... ` (up to its RETURNING): the lease of the instances
    of `picked`, each value an SQL expression (a placeholder); `statuses`: those of
    compensating and running (a compensating instance stays so, any other runs)."""
    return (
        f"UPDATE {WorkflowInstance._meta.db_table} AS i SET lease_token = {token}, "
        f"lease_owner = {owner}, lease_until = {lease_until}, runs = i.runs + 1, "
        f"updated_at = {now}, status = CASE WHEN i.status = {statuses[0]} THEN i.status "
        f"ELSE {statuses[1]} END FROM {picked} WHERE i.id = picked.id "
    )


def claim_sql(request: ClaimRequest) -> tuple[str, list[Any]]:
    """The claim without limits as one statement: pick the due candidates (due_ranges), lease
    them, and return their rows with the last signal id (lease_sql)."""
    picks, params = due_ranges(
        columns="id",
        now=request.now,
        limit=request.limit,
        workflows=request.workflows,
        queues=request.queues,
    )
    lease, more = lease_sql(
        "picked",
        token=request.token,
        owner=request.owner,
        lease_until=request.lease_until,
        now=request.now,
    )
    return picks + lease, params + more


def leased(
    connection: Any, rows: InstanceRows, sql: str, params: list[Any]
) -> tuple[list[WorkflowInstance], int]:
    """The instances lease_sql() leased, in claim order, and the last signal id."""
    found = driver.fetch(connection, sql, params)
    claimed = rows.instances(connection, [row[:-1] for row in found])
    claimed.sort(key=lambda i: (i.priority, i.wake_at, i.created_at, i.id))
    return claimed, int(found[0][-1]) if found else 0


_SIGNATURE = (
    "dw_final_write_ride_v2(text, text, jsonb, text, jsonb, jsonb, timestamptz, text, text, "
    "timestamptz, text[], text)"
)

RIDE_CALL = (
    f"SELECT f.{FLAGS.replace(', ', ', f.')}, f.last_signal_id, "
    + ", ".join(f"(f.rode).{column}" for column in INSTANCE_COLUMNS.split(", "))
    + " FROM dw_final_write_ride_v2(%s, %s, %s::jsonb, %s, %s::jsonb, %s::jsonb, "
    "%s::timestamptz, %s, %s, %s::timestamptz, %s::text[], %s) AS f"
)
"""dw_final_write_ride_v2's call: dw_final_write_v1's parameters, then the ride's owner, lease token,
lease end, workflows (`name:version` each) and queue (NULL: every queue); one row of the
lease's flags, the last signal id and the leased instance's INSTANCE_COLUMNS (NULL when it
leased none), or none when the lease is gone."""


def ride_params(
    *, owner: str, token: str, lease_until: Any, workflows: list[tuple[str, int]], queue: str | None
) -> list[Any]:
    """RIDE_CALL's parameters after dw_final_write_v1's, each text, None or a datetime (as
    postgresql_libpq.call_row() sends them): the workflows as an array's text."""
    keys = (f"{name}:{version}" for name, version in workflows)
    array = ",".join('"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"' for key in keys)
    return [owner, token, lease_until, "{" + array + "}", queue]


def _from_text(field: Any) -> Callable[[str], Any]:
    """A column of `field` from PostgreSQL's text output, as psycopg's loader would make it
    (JSON stays text, as Django has psycopg load it)."""
    kind = (field.target_field if field.is_relation else field).get_internal_type()
    if kind in ("CharField", "TextField", "JSONField"):
        return str
    if kind in ("PositiveIntegerField", "BigIntegerField", "IntegerField", "AutoField"):
        return int
    if kind == "BooleanField":
        return BOOLEAN
    if kind == "DateTimeField":
        return datetime.fromisoformat  # the session's time zone, as the server writes it
    raise TypeError(f"No text conversion for {field.name!r} ({kind}) of a ridden instance.")


RIDE_COLUMNS: tuple[Callable[[str], Any], ...] = (
    BOOLEAN,
    BOOLEAN,
    TEXT,
    int,
    *(_from_text(field) for field in WorkflowInstance._meta.concrete_fields),
)
"""RIDE_CALL's columns from their text (postgresql_libpq.call_row)."""


def ride_function() -> Routines:
    """Whether the database has dw_final_write_ride_v2 and the connection's role may call it."""
    return callable_functions([_SIGNATURE])
