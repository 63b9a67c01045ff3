"""PostgreSQL: a claim that rides on an instance's last write (store.backends.writes.Ride).

`dw_final_write_ride` (migration 0019) writes what `dw_final_write` writes (postgresql_writes.py)
and then, if that write landed, leases the next due instance of the ride's workflows (of every
queue, or of one) to the ride's owner, as a claim without limits would: in claim order, `FOR
UPDATE SKIP LOCKED` (never an instance another claim holds), with the last signal id. While a
lease of a due instance has lapsed it leases nothing: those go to the loop's claims, which read
the lapsed range (postgresql_claims.due_ranges) and would otherwise wait behind a busy worker's
rides. One call, one transaction: a busy worker's releases feed its pool threads, and its loop
claims only once a release found nothing.

As a function, its statements are planned once per session, as dw_final_write's are. The same
claim riding in the write's statement itself (third round of issue 15, reverted) made the
server plan the larger statement at every release, which cost more than the claims it saved.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from ....models import Status, WorkflowInstance
from ..rows import INSTANCE_COLUMNS
from ..writes import Routines
from .claims import ANY_LAPSED, LAST_SIGNAL_ID, ORDER, QUEUE_FREE_ORDER, lease_update
from .libpq import BOOLEAN, TEXT
from .writes import ANNOUNCED_FLAGS, FLAGS, final_query

_SIGNATURE = (
    "dw_final_write_ride(text, text, jsonb, text, jsonb, jsonb, timestamptz, text, text, "
    "timestamptz, text[], text)"
)

RIDE_CALL = (
    f"SELECT f.{FLAGS.replace(', ', ', f.')}, f.last_signal_id, "
    + ", ".join(f"(f.rode).{column}" for column in INSTANCE_COLUMNS.split(", "))
    + " FROM dw_final_write_ride(%s, %s, %s::jsonb, %s, %s::jsonb, %s::jsonb, %s::timestamptz, "
    "%s, %s, %s::timestamptz, %s::text[], %s) AS f"
)
"""dw_final_write_ride's call: dw_final_write's parameters, then the ride's owner, lease token,
lease end, workflows (`name:version` each) and queue (NULL: every queue); one row of the
lease's flags, the last signal id and the leased instance's INSTANCE_COLUMNS (NULL when it
leased none), or none when the lease is gone."""


def ride_params(
    *, owner: str, token: str, lease_until: Any, workflows: list[tuple[str, int]], queue: str | None
) -> list[Any]:
    """RIDE_CALL's parameters after dw_final_write's, each text, None or a datetime (as
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


COLUMNS: tuple[Callable[[str], Any], ...] = (
    BOOLEAN,
    BOOLEAN,
    TEXT,
    int,
    *(_from_text(field) for field in WorkflowInstance._meta.concrete_fields),
)
"""RIDE_CALL's columns from their text (postgresql_libpq.call_row)."""


def pick_sql(queue: bool) -> str:
    """The next free due instance of the ride's workflows ($11), of queue $12 or of every
    queue, by the claim index a claim of the same queues reads, in its order."""
    table = WorkflowInstance._meta.db_table
    return (
        f"SELECT id FROM {table} WHERE wake_at <= $7 AND lease_until IS NULL AND NOT parked "
        + ("AND queue = $12 " if queue else "")
        + "AND (workflow || ':' || version) = ANY($11) "
        + (QUEUE_FREE_ORDER if queue else ORDER)
        + " LIMIT 1 FOR UPDATE SKIP LOCKED"
    )


def _lease(pick: str) -> str:
    """Lease the instance `pick` finds, as a claim's lease does (lease_update): into `leased`,
    the instance's row and the last signal id of the statement's snapshot."""
    statuses = (f"'{Status.COMPENSATING}'", f"'{Status.RUNNING}'")
    return (
        lease_update(f"({pick}) AS picked", "$9", "$8", "$10", "$7", statuses)
        + f"RETURNING i AS instance, {LAST_SIGNAL_ID} AS last INTO leased;"
    )


def create_function(schema_editor: Any) -> None:
    """Create (or replace) dw_final_write_ride."""
    table = WorkflowInstance._meta.db_table
    body = (
        f"DECLARE r record; leased record;\nBEGIN FOR r IN {final_query()} LOOP\n"
        f"{ANNOUNCED_FLAGS}last_signal_id := 0; rode := NULL;\n"
        f"IF $8 IS NOT NULL AND NOT COALESCE({ANY_LAPSED} < $7, false) THEN\n"
        f"IF $12 IS NULL THEN {_lease(pick_sql(False))}\nELSE {_lease(pick_sql(True))}\nEND IF;\n"
        f"IF FOUND THEN rode := leased.instance; last_signal_id := leased.last; END IF;\n"
        f"END IF;\nRETURN NEXT; END LOOP; END"
    )
    schema_editor.execute(
        f"CREATE OR REPLACE FUNCTION {_SIGNATURE} RETURNS TABLE (cancel_requested boolean, "
        f"terminate_requested boolean, cancel_reason text, last_signal_id bigint, rode {table}) "
        f"LANGUAGE plpgsql VOLATILE AS $fn$\n"
        # the flags' names are both the result's columns and the instance's
        f"#variable_conflict use_column\n{body}\n$fn$"
    )


def drop_function(schema_editor: Any) -> None:
    schema_editor.execute(f"DROP FUNCTION IF EXISTS {_SIGNATURE}")


def function() -> Routines:
    """Whether the database has dw_final_write_ride and the connection's role may call it."""
    return Routines(
        "SELECT COALESCE(has_function_privilege(to_regprocedure(%s), 'EXECUTE'), false)",
        [_SIGNATURE],
    )
