"""MySQL's and MariaDB's writes of schedule occurrences prepared ahead of their time
(../ahead.py says what they do). The driver quotes every parameter in Python at the statement:
ten thousand rows of 36 values were most of the write's time. So each value is quoted ahead of
time, as the driver would quote it, and the statements are sent as written, with no parameter.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Model

from ....models import WorkflowSchedule
from ..ahead import CASE_CHUNK, Take, columns, prepared_field, takeable, update_by_case
from ..params import insert_head_and_suffix, row_values

INSERT_CHUNK = 2_000  # rows an INSERT sends at most


def literal(connection: Any, value: Any) -> str:
    """`value` (as prepared for the database) quoted as the driver quotes a parameter."""
    raw = connection.connection
    quoted = raw.literal(value)
    return quoted.decode(raw.encoding) if isinstance(quoted, bytes) else str(quoted)


def prepare_take(
    connection: Any, id: str, revision: int, own: str, state: Any, wake_at: Any, created_at: Any
) -> tuple[str, str, str]:
    """A take's values quoted: id, state, wake time."""
    return (
        literal(connection, id),
        literal(connection, prepared_field(connection, WorkflowSchedule, "state", state)),
        literal(connection, prepared_field(connection, WorkflowSchedule, "wake_at", wake_at)),
    )


def take(
    connection: Any, now: datetime, takes: list[Take], unfinished: tuple[str, ...]
) -> list[str]:
    """Backend.take_schedules(): the takeable() ones written in UPDATEs of CASE_CHUNK
    schedules each, their values written into the statement."""
    taken = takeable(connection, now, takes, unfinished)
    table, column, _, _ = columns(connection)
    updated_at = literal(
        connection, prepared_field(connection, WorkflowSchedule, "updated_at", now)
    )
    with connection.cursor() as cursor:
        for first in range(0, len(taken), CASE_CHUNK):
            chunk = [take.values for take in taken[first : first + CASE_CHUNK]]
            states = "".join(f"WHEN {id} THEN {state} " for id, state, _ in chunk)
            wakes = "".join(f"WHEN {id} THEN {wake} " for id, _, wake in chunk)
            ids = ", ".join(id for id, _, _ in chunk)
            cursor.execute(update_by_case(column, table, states, wakes, ids, updated_at))
    return [take.id for take in taken]


def prepare_row(connection: Any, obj: Model) -> list[str]:
    """`obj`'s row (params.row_values()) quoted."""
    return [literal(connection, value) for value in row_values(obj, connection)]


def insert(connection: Any, model: type[Model], rows: list[list[str]], packet: int | None) -> int:
    """Backend.insert_prepared(): INSERT IGNOREs of at most INSERT_CHUNK rows each, and of at
    most half the server's max_allowed_packet (`packet`, when known) in bytes, written as they
    were quoted."""
    head, suffix = insert_head_and_suffix(model, connection)
    room = None if packet is None else packet // 2
    inserted = 0
    with connection.cursor() as cursor:
        for chunk in _chunks([f"({', '.join(row)})" for row in rows], room):
            cursor.execute(f"{head}{', '.join(chunk)}{suffix}")
            inserted += max(cursor.rowcount, 0)
    return inserted


def _chunks(rows: list[str], room: int | None) -> list[list[str]]:
    """The rows in order, in chunks of at most INSERT_CHUNK rows and `room` bytes (a row
    larger than that alone in its chunk)."""
    chunks: list[list[str]] = [[]]
    size = 0
    for row in rows:
        length = len(row.encode()) + 2
        if chunks[-1] and (
            len(chunks[-1]) == INSERT_CHUNK or (room is not None and size + length > room)
        ):
            chunks.append([])
            size = 0
        chunks[-1].append(row)
        size += length
    return [chunk for chunk in chunks if chunk]
