"""The writes of schedule occurrences prepared ahead of their time (schedules/ahead.py): the
schedules taken while each is still at the revision its plan was made from, with no unfinished
instance in the way of its `overlap`, and the instances' rows, their values prepared before the
INSERT.

Every database's statements; PostgreSQL's own are in postgresql/ahead.py, MySQL's in
mysql/ahead.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Field, Model

from ...models import WorkflowInstance, WorkflowSchedule

CASE_CHUNK = 500  # schedules a CASE statement takes: its WHENs are compared row by row


@dataclass(frozen=True)
class Take:
    """A schedule to take: written (state, wake time, revision + 1, an expired lease cleared)
    while it is still the row created at `created_at` (a schedule removed and saved again
    starts at revision 1 again) at `revision`, not paused, held by no live lease, and, with `overlap`,
    has no unfinished instance but `own`. `values`: the backend's own form of them
    (Backend.prepare_take())."""

    id: str
    revision: int
    created_at: datetime
    overlap: bool
    own: str
    values: Any


def columns(connection: Any) -> tuple[str, dict[str, str], str, dict[str, str]]:
    """The schedules' table and columns, and the instances' table and columns, quoted."""
    quote = connection.ops.quote_name
    schedules = WorkflowSchedule._meta
    instances = WorkflowInstance._meta

    def quoted(meta: Any, names: tuple[str, ...]) -> dict[str, str]:
        found = {}
        for name in names:
            field = meta.get_field(name)
            assert isinstance(field, Field) and field.column is not None
            found[name] = str(quote(field.column))
        return found

    schedule = (
        "id",
        "state",
        "wake_at",
        "updated_at",
        "revision",
        "paused",
        "created_at",
        "lease_token",
        "lease_owner",
        "lease_until",
    )
    return (
        str(quote(schedules.db_table)),
        quoted(schedules, schedule),
        str(quote(instances.db_table)),
        quoted(instances, ("id", "schedule_id", "status")),
    )


def set_and_free(column: dict[str, str], updated_at: str = "%s") -> str:
    """What a take writes besides the state and wake time: the revision moved on, the update
    time (`updated_at`: its placeholder or literal), and an expired lease (the only one a take
    finds) cleared."""
    return (
        f"{column['updated_at']} = {updated_at}, {column['revision']} = {column['revision']} + 1, "
        f"{column['lease_token']} = NULL, {column['lease_owner']} = NULL, "
        f"{column['lease_until']} = NULL"
    )


def prepared_field(connection: Any, model: type[Model], name: str, value: Any) -> Any:
    field = model._meta.get_field(name)
    assert isinstance(field, Field)
    return field.get_db_prep_save(value, connection)


# -- every database ------------------------------------------------------------------------------


def takeable(
    connection: Any, now: datetime, takes: list[Take], unfinished: tuple[str, ...]
) -> list[Take]:
    """Those of `takes` a take can write, their schedules locked (FOR UPDATE where there are
    row locks; SQLite's write lock is taken): the rows and revisions their plans were made
    from, not paused, no live lease,
    and no unfinished instance in the way of `overlap`."""
    wanted = {take.id: take for take in takes}
    rows = WorkflowSchedule.objects.using(connection.alias).filter(
        pk__in=list(wanted), paused=False
    )
    rows = rows.exclude(lease_until__gte=now)
    if connection.features.has_select_for_update:
        rows = rows.select_for_update()
    found = [
        wanted[id]
        for id, revision, created_at in rows.values_list("id", "revision", "created_at")
        if (revision, created_at) == (wanted[id].revision, wanted[id].created_at)
    ]
    in_the_way = WorkflowInstance.objects.using(connection.alias).filter(
        schedule_id__in=[take.id for take in found if take.overlap], status__in=unfinished
    )
    blocked = {
        schedule
        for schedule, id in in_the_way.values_list("schedule_id", "id")
        if id != wanted[str(schedule)].own
    }
    return [take for take in found if take.id not in blocked]


def take_by_case(
    connection: Any, now: datetime, takes: list[Take], unfinished: tuple[str, ...]
) -> list[str]:
    """Backend.take_schedules(): takeable() ones written in UPDATEs of CASE_CHUNK schedules
    each. `values`: (state, wake time), prepared for the database."""
    taken = takeable(connection, now, takes, unfinished)
    table, column, _, _ = columns(connection)
    updated_at = prepared_field(connection, WorkflowSchedule, "updated_at", now)
    with connection.cursor() as cursor:
        for first in range(0, len(taken), CASE_CHUNK):
            chunk = taken[first : first + CASE_CHUNK]
            states: list[Any] = []
            wakes: list[Any] = []
            for take in chunk:
                state, wake_at = take.values
                states += [take.id, state]
                wakes += [take.id, wake_at]
            when = "WHEN %s THEN %s " * len(chunk)
            ids = ", ".join(["%s"] * len(chunk))
            cursor.execute(
                update_by_case(column, table, when, when, ids),
                [*states, *wakes, updated_at, *(take.id for take in chunk)],
            )
    return [take.id for take in taken]


def update_by_case(
    column: dict[str, str],
    table: str,
    states: str,
    wakes: str,
    ids: str,
    updated_at: str = "%s",
) -> str:
    """The UPDATE of schedules `ids`: the WHENs of a CASE on the id give each its state
    (`states`) and wake time (`wakes`); `updated_at` is the update time's placeholder or
    literal."""
    return (
        f"UPDATE {table} SET {column['state']} = CASE {column['id']} {states}END, "
        f"{column['wake_at']} = CASE {column['id']} {wakes}END, "
        f"{set_and_free(column, updated_at)} WHERE {column['id']} IN ({ids})"
    )
