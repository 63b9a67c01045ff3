"""PostgreSQL's writes of schedule occurrences prepared ahead of their time (../ahead.py says
what they do): one UPDATE ... RETURNING joined to arrays, where a CASE of one WHEN a schedule
would be compared row by row, and an INSERT of one array a column. Each array's text is written
ahead of time, element by element, as psycopg would write it: quoting ten thousand rows' values
into arrays at the statement was most of the write's CPU.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Model
from psycopg.adapt import PyFormat, Transformer

from ....jsonvalues import text as json_text
from ....models import WorkflowSchedule
from ..ahead import Take, columns, prepared_field, set_and_free
from ..params import row_fields, row_values


def array_element(connection: Any, value: Any) -> str:
    """`value` (as prepared for the database) written as an element of an array's text,
    quoted: what psycopg would write for it at the statement, written ahead."""
    if value is None:
        return "NULL"
    # psycopg's adapters of this connection (Django's included), kept while it is the same one.
    raw = connection.connection
    kept = getattr(connection, "_workflows_transformer", None)
    if kept is None or kept[0] is not raw:
        kept = connection._workflows_transformer = (raw, Transformer.from_context(raw))
    dumped = kept[1].get_dumper(value, PyFormat.TEXT).dump(value)
    if dumped is None:
        return "NULL"
    text = bytes(dumped).decode()
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def array(elements: list[str]) -> str:
    """An array's text from its elements written by array_element()."""
    return "{" + ",".join(elements) + "}"


def prepare_take(
    connection: Any, id: str, revision: int, own: str, state: Any, wake_at: Any, created_at: Any
) -> tuple[str, ...]:
    """A take's values as array elements: id, revision, own instance, state, wake time, the
    schedule's creation time."""
    wake = prepared_field(connection, WorkflowSchedule, "wake_at", wake_at)
    return (
        array_element(connection, id),
        str(revision),
        array_element(connection, own),
        array_element(connection, None if state is None else json_text(state)),
        array_element(connection, wake),
        array_element(
            connection, prepared_field(connection, WorkflowSchedule, "created_at", created_at)
        ),
    )


def take(
    connection: Any, now: datetime, takes: list[Take], unfinished: tuple[str, ...]
) -> list[str]:
    """Backend.take_schedules() in two statements: the free schedules (not paused, no live
    lease) locked in the order of their ids, so that two workers taking the same schedules wait
    for each other in one order, never in a circle, and a regular tick's write of the schedules
    it leased never waits for a take; then one UPDATE ... RETURNING joined to the takes'
    arrays, the unfinished instances in the way looked up by the instances' schedule index."""
    if not takes:
        return []
    table, column, instances, instance = columns(connection)
    statuses = ", ".join(["%s"] * len(unfinished))
    free = (
        f"NOT {column['paused']} "
        f"AND ({column['lease_until']} IS NULL OR {column['lease_until']} < %s)"
    )
    lock = (
        f"SELECT {column['id']} FROM {table} WHERE {column['id']} = ANY(%s::varchar[]) "
        f"AND {free} ORDER BY {column['id']} FOR UPDATE"
    )
    update = (
        f"UPDATE {table} SET {column['state']} = taken.new_state::jsonb, "
        f"{column['wake_at']} = taken.new_wake_at, {set_and_free(column)} "
        f"FROM UNNEST(%s::varchar[], %s::integer[], %s::boolean[], %s::varchar[], %s::text[], "
        f"%s::timestamptz[], %s::timestamptz[]) AS taken(taken_id, taken_revision, overlap, "
        f"own, new_state, new_wake_at, taken_created_at) "
        f"WHERE {column['id']} = taken.taken_id AND {column['revision']} = taken.taken_revision "
        f"AND {column['created_at']} = taken.taken_created_at AND {free} "
        f"AND NOT (taken.overlap AND EXISTS (SELECT 1 FROM {instances} "
        f"WHERE {instance['schedule_id']} = taken.taken_id AND {instance['id']} <> taken.own "
        f"AND {instance['status']} IN ({statuses}))) "
        f"RETURNING {column['id']}"
    )
    ids, revisions, owns, states, wakes, created = (
        list(values) for values in zip(*(t.values for t in takes), strict=True)
    )
    overlaps = ["t" if take.overlap else "f" for take in takes]
    arrays = [array(ids), array(revisions), array(overlaps), array(owns), array(states)]
    arrays += [array(wakes), array(created)]
    with connection.cursor() as cursor:
        cursor.execute(lock, [arrays[0], now])
        cursor.execute(update, [now, *arrays, now, *unfinished])
        return [id for (id,) in cursor.fetchall()]


def prepare_row(connection: Any, obj: Model) -> list[str]:
    """`obj`'s row (params.row_values()) as array elements."""
    return [array_element(connection, value) for value in row_values(obj, connection)]


def insert(connection: Any, model: type[Model], rows: list[list[str]]) -> int:
    """Backend.insert_prepared() in one INSERT ... SELECT FROM UNNEST, an array a column, each
    row unless its key exists (PostgreSQL)."""
    meta = model._meta
    quote = connection.ops.quote_name
    fields = row_fields(model, connection)
    arrays = ", ".join(f"%s::{field.db_type(connection).split('(')[0]}[]" for field in fields)
    columns = ", ".join(quote(field.column) for field in fields)
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({columns}) SELECT * FROM UNNEST({arrays}) "
        "ON CONFLICT DO NOTHING"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [array(list(column)) for column in zip(*rows, strict=True)])
        return max(cursor.rowcount, 0)
