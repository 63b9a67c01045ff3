"""Deleting instances on MySQL and MariaDB (a purge batch, wf.delete()): the tables that point
at them, then the instances, each already locked by the caller (read FOR UPDATE), by
hand-written SQL in the caller's transaction.

Up to LISTED_IDS ids, one id list per table. More go into a temporary table, and each table is
deleted joined from it: an id list costs the server its parse and a range per id in every
statement, even on an empty table (40 ms for 10,000 ids), and with 10,000 ids in one list
MariaDB read the whole wait table rather than its index. CREATE and DROP TEMPORARY TABLE commit
nothing. Where the table cannot be made (no CREATE TEMPORARY TABLES privilege; MySQL's GTID
consistency forbids it in a transaction), lists of LISTED_IDS ids.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from django.db import DatabaseError

from ....models import (
    InstanceAttribute,
    InstanceTag,
    JournalEntry,
    Wait,
    WorkflowInstance,
    WorkflowStream,
    WorkflowStreamItem,
)

# They point at the instances.
DEPENDENTS = (
    JournalEntry,
    Wait,
    InstanceTag,
    InstanceAttribute,
    WorkflowStreamItem,
    WorkflowStream,
)
DOOMED = "dw_purged_ids"
"""The temporary table of the ids being deleted (one per connection, while it deletes)."""
LISTED_IDS = 1000  # ids per statement without that table (purge()'s batches are 500 by default)


def delete_instances(connection: Any, ids: list[str], packet: int | None) -> int:
    """Delete the instances `ids` and their dependents' rows: how many instances."""
    if len(ids) <= LISTED_IDS:
        return _delete_listed(connection, ids)
    try:
        with connection.cursor() as cursor:
            # The id column as the instance table has it (its collation), and no row.
            cursor.execute(
                f"CREATE TEMPORARY TABLE {DOOMED} (PRIMARY KEY (id)) "
                f"SELECT id FROM {WorkflowInstance._meta.db_table} WHERE 1 = 0"
            )
    except DatabaseError:
        return _delete_listed(connection, ids)
    try:
        return _delete_joined(connection, ids, packet or 0)
    finally:
        # Not transactional: the rows' deletes commit or roll back with the caller's.
        with contextlib.suppress(DatabaseError), connection.cursor() as cursor:
            cursor.execute(f"DROP TEMPORARY TABLE IF EXISTS {DOOMED}")


def _delete_joined(connection: Any, ids: list[str], packet: int) -> int:
    with connection.cursor() as cursor:
        for chunk in _packets(ids, packet):
            values = ", ".join(["(%s)"] * len(chunk))
            cursor.execute(f"INSERT INTO {DOOMED} (id) VALUES {values}", chunk)
        # From the id table (STRAIGHT_JOIN), each id looked up in the table's index.
        for model in DEPENDENTS:
            cursor.execute(
                f"DELETE x FROM {DOOMED} d STRAIGHT_JOIN {model._meta.db_table} x "
                f"ON x.instance_id = d.id"
            )
        cursor.execute(
            f"DELETE x FROM {DOOMED} d STRAIGHT_JOIN {WorkflowInstance._meta.db_table} x "
            f"ON x.id = d.id"
        )
        return int(cursor.rowcount)


def _delete_listed(connection: Any, ids: list[str]) -> int:
    deleted = 0
    with connection.cursor() as cursor:
        for start in range(0, len(ids), LISTED_IDS):
            chunk = ids[start : start + LISTED_IDS]
            marks = ", ".join(["%s"] * len(chunk))
            for model in DEPENDENTS:
                cursor.execute(
                    f"DELETE FROM {model._meta.db_table} WHERE instance_id IN ({marks})", chunk
                )
            cursor.execute(
                f"DELETE FROM {WorkflowInstance._meta.db_table} WHERE id IN ({marks})", chunk
            )
            deleted += cursor.rowcount
    return deleted


def _packets(ids: list[str], packet: int) -> Iterator[list[str]]:
    """`ids` in lists whose statement fits in half a packet: each id as an escaped literal
    (a quote or backslash takes two bytes) with its quotes and comma, in UTF-8."""
    room, size = max(packet // 2, 64 * 1024), 0
    chunk: list[str] = []
    for id in ids:
        length = 2 * len(id.encode()) + 4
        if chunk and size + length > room:
            yield chunk
            size, chunk = 0, []
        chunk.append(id)
        size += length
    if chunk:
        yield chunk
