"""PostgreSQL: a claim that rides on an instance's last write (store.backends.writes.Ride).

`dw_final_write_ride_v1` (the frozen file `sql/dw_final_write_ride_v1.sql`, created by migration
0002_routines; a changed function is a new file, `_v2`, and a new migration) writes what
`dw_final_write_v1` writes (postgresql/writes.py) and then, if that write landed, leases the
next due instance of the ride's workflows (of every queue, or of one) to the ride's owner, as a
claim without limits would: in claim order, `FOR UPDATE SKIP LOCKED` (never an instance another
claim holds), with the last signal id. While a lease of a due instance has lapsed it leases
nothing: those go to the loop's claims, which read the lapsed range (postgresql_claims.due_ranges)
and would otherwise wait behind a busy worker's rides. One call, one transaction: a busy
worker's releases feed its pool threads, and its loop claims only once a release found nothing.

As a function, its statements are planned once per session, as dw_final_write_v1's are. The same
claim riding in the write's statement itself (third round of issue 15, reverted) made the
server plan the larger statement at every release, which cost more than the claims it saved.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from ....models import WorkflowInstance
from ..rows import INSTANCE_COLUMNS
from ..writes import Routines
from .libpq import BOOLEAN, TEXT
from .writes import FLAGS

_SIGNATURE = (
    "dw_final_write_ride_v1(text, text, jsonb, text, jsonb, jsonb, timestamptz, text, text, "
    "timestamptz, text[], text)"
)

RIDE_CALL = (
    f"SELECT f.{FLAGS.replace(', ', ', f.')}, f.last_signal_id, "
    + ", ".join(f"(f.rode).{column}" for column in INSTANCE_COLUMNS.split(", "))
    + " FROM dw_final_write_ride_v1(%s, %s, %s::jsonb, %s, %s::jsonb, %s::jsonb, "
    "%s::timestamptz, %s, %s, %s::timestamptz, %s::text[], %s) AS f"
)
"""dw_final_write_ride_v1's call: dw_final_write_v1's parameters, then the ride's owner, lease token,
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


COLUMNS: tuple[Callable[[str], Any], ...] = (
    BOOLEAN,
    BOOLEAN,
    TEXT,
    int,
    *(_from_text(field) for field in WorkflowInstance._meta.concrete_fields),
)
"""RIDE_CALL's columns from their text (postgresql_libpq.call_row)."""


def function() -> Routines:
    """Whether the database has dw_final_write_ride_v1 and the connection's role may call it."""
    return Routines(
        "SELECT COALESCE(has_function_privilege(to_regprocedure(%s), 'EXECUTE'), false)",
        [_SIGNATURE],
    )
