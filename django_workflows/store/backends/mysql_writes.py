"""The lease holder's write on MySQL and MariaDB in one round trip: its statements sent together
as one multi-statement batch (mysqlclient opens every connection with CLIENT_MULTI_STATEMENTS),
each condition on the lease and the flags in the SQL itself.

The batch, in one transaction: the instance's row locked FOR UPDATE by its id and lease token
(its flags are the batch's one result set), the journal entries upserted from that row (the
guarded ones only while no cancel or terminate is requested), the instance updated by its id
and lease token. Without the lease, the row read finds nothing and every statement writes
nothing. The server stops at a statement's error (a killed query, a deadlock): the caller's
ROLLBACK then takes back what the batch wrote. Five round trips before (START TRANSACTION, the
row lock's read, the upsert, the update, COMMIT), each a cursor call in Django and mysqlclient
and a command for the server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import DatabaseError

from ...models import JournalEntry, WorkflowInstance
from .writes import UNSET

if TYPE_CHECKING:
    from ..instances import InstanceWrite

Statement = tuple[str, list[Any]]


def write_statements(
    connection: Any,
    id: str,
    token: str,
    write: InstanceWrite,
    changes: dict[str, Any],
    wake_at: Any,
) -> list[Statement]:
    """The write's statements, the row lock's read first: `changes` are the instance's new
    columns and `wake_at` a suspension's wake time, UNSET if it does not suspend (writes.
    write_changes)."""
    instances = WorkflowInstance._meta
    table = instances.db_table
    held = "id = %s AND lease_token = %s"
    statements: list[Statement] = [
        (
            f"SELECT cancel_requested, terminate_requested, cancel_reason FROM {table} "
            f"WHERE {held} FOR UPDATE",
            [id, token],
        )
    ]
    journal = JournalEntry._meta
    document = journal.get_field("document")
    selects: list[str] = []
    params: list[Any] = []

    def prepared(entry: dict[str, Any]) -> Any:
        return document.get_db_prep_save(entry, connection)

    # One row per name, as the ORM's path writes them: a name can be in both (a failed
    # attempt's entry and, guarded, the next attempt's start); the guarded one wins unless a
    # cancel or terminate is requested.
    for name, entry in write.entries.items():
        if name in write.guarded_entries:
            selects.append(
                f"SELECT id, %s, CASE WHEN cancel_requested OR terminate_requested THEN %s "
                f"ELSE %s END FROM {table} WHERE {held}"
            )
            params += [name, prepared(entry), prepared(write.guarded_entries[name]), id, token]
        else:
            selects.append(f"SELECT id, %s, %s FROM {table} WHERE {held}")
            params += [name, prepared(entry), id, token]
    for name, entry in write.guarded_entries.items():
        if name not in write.entries:
            selects.append(
                f"SELECT id, %s, %s FROM {table} WHERE {held} "
                f"AND NOT (cancel_requested OR terminate_requested)"
            )
            params += [name, prepared(entry), id, token]
    if selects:
        statements.append(
            (
                f"INSERT INTO {journal.db_table} (instance_id, name, document) "
                + " UNION ALL ".join(selects)
                + f" ON DUPLICATE KEY UPDATE {document.column} = VALUES({document.column})",  # type: ignore[union-attr]
                params,
            )
        )
    sets: list[str] = []
    values: list[Any] = []
    if wake_at is not UNSET:
        # First: the assignments of a MySQL UPDATE see the columns the ones before them set.
        due: Any = instances.get_field("wake_at")
        sets.append("wake_at = CASE WHEN cancel_requested THEN %s ELSE %s END")
        values += [due.get_db_prep_save(at, connection) for at in (write.now, wake_at)]
    for name, value in changes.items():
        field: Any = instances.get_field(name)
        sets.append(f"{field.column} = %s")
        values.append(field.get_db_prep_save(value, connection))
    if sets:
        statements.append(
            (f"UPDATE {table} SET {', '.join(sets)} WHERE {held}", [*values, id, token])
        )
    return statements


def run_batch(connection: Any, statements: list[Statement]) -> list[tuple[Any, ...]]:
    """Send `statements` in one round trip, in one transaction (the caller's, or one of their
    own: START TRANSACTION ... COMMIT in the batch, on a connection in autocommit mode), and
    return the rows of the first.

    Every result is read, so a statement's error is raised here; the server runs none after
    it, and ROLLBACK then undoes the batch's own transaction (a lost connection rolled back by
    itself)."""
    own = connection.get_autocommit() and not connection.in_atomic_block
    sql = ";\n".join(statement for statement, _ in statements)
    params = [param for _, statement_params in statements for param in statement_params]
    if own:
        sql = f"START TRANSACTION;\n{sql};\nCOMMIT"
    with connection.cursor() as cursor:
        try:
            cursor.execute(sql, params)
            if own:
                cursor.nextset()  # past START TRANSACTION's
            rows = list(cursor.fetchall())
            while cursor.nextset():
                pass
        except BaseException:
            if own:
                try:
                    cursor.execute("ROLLBACK")
                except DatabaseError:
                    pass  # a lost connection rolled back by itself; the first error says why
            raise
    return rows
