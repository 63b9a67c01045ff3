"""A schedule tick's write of the schedules of its claimed batch (Backend.write_schedules), in
one statement on every database."""

from __future__ import annotations

from typing import Any

from django.db.models import Field

from ...models import WorkflowSchedule

_RELEASED = ("lease_token", "lease_owner", "lease_until")  # a schedule's lease, cleared


def write_by_case(
    connection: Any,
    token: str,
    now: Any,
    writes: list[tuple[str, Any, Any]],
    parameters: tuple[str, str],
) -> int:
    """One UPDATE whose CASE gives each schedule (id, state, wake time) its own state and wake
    time, only while `token` is its lease token: the rows written. `parameters`: the
    placeholders of a JSON value and of a datetime where a CASE gives them (PostgreSQL must be
    told their types)."""
    meta = WorkflowSchedule._meta
    name = connection.ops.quote_name
    id, state, wake_at = meta.pk, meta.get_field("state"), meta.get_field("wake_at")
    ids = [id.get_db_prep_value(row[0], connection) for row in writes]
    states: list[Any] = []
    wakes: list[Any] = []
    for key, (_, value, at) in zip(ids, writes, strict=True):
        states += [key, state.get_db_prep_save(value, connection)]
        wakes += [key, wake_at.get_db_prep_save(at, connection)]
    json_when = f"WHEN %s THEN {parameters[0]} " * len(writes)
    time_when = f"WHEN %s THEN {parameters[1]} " * len(writes)

    def quoted(field_name: str) -> str:
        field = meta.get_field(field_name)
        assert isinstance(field, Field) and field.column is not None
        return str(name(field.column))

    names = ("id", "state", "wake_at", "updated_at", "revision", *_RELEASED)
    column = {f: quoted(f) for f in names}
    sql = (
        f"UPDATE {name(meta.db_table)} SET "
        f"{column['state']} = CASE {column['id']} {json_when}END, "
        f"{column['wake_at']} = CASE {column['id']} {time_when}END, "
        f"{column['updated_at']} = %s, "
        f"{column['revision']} = {column['revision']} + 1, "
        + ", ".join(f"{column[f]} = NULL" for f in _RELEASED)
        + f" WHERE {column['id']} IN ({', '.join(['%s'] * len(ids))}) "
        f"AND {column['lease_token']} = %s"
    )
    updated = meta.get_field("updated_at").get_db_prep_save(now, connection)
    with connection.cursor() as cursor:
        cursor.execute(sql, [*states, *wakes, updated, *ids, token])
        return int(cursor.rowcount)
