"""Statements sent together on MySQL and MariaDB, one round trip for several: mysqlclient opens
every connection with CLIENT_MULTI_STATEMENTS, and each statement's result is read in turn
(results()), straight from mysqlclient's connection where Django neither logs nor wraps the
statements (_batch_driver()). A round trip costs the worker a call into the driver and the
server a command; the statements themselves cost the same.

The lease holder's write is one batch (write_statements(), run_batch()), in one transaction:
the instance's row locked FOR UPDATE by its id and lease token (its flags are the batch's one
result set), the journal entries upserted from that row (the guarded ones only while no cancel
or terminate is requested), the instance updated by its id and lease token; without the lease,
the row read finds nothing and every statement writes nothing. Five round trips before (START
TRANSACTION, the row lock's read, the upsert, the update, COMMIT). The claim sends its
statements in two (MySQLBackend.claim), eight before.

The server runs no statement of a batch after one that failed (a killed query, a deadlock):
ROLLBACK then takes back what the batch's transaction wrote.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import DatabaseError
from django.db.backends.mysql.base import CursorWrapper as MySQLCursorWrapper

from ....models import JournalEntry, WorkflowInstance
from ..driver import direct
from ..writes import UNSET

if TYPE_CHECKING:
    from ..writes import InstanceWrite

Statement = tuple[str, list[Any]]

MULTI_STATEMENTS = 1 << 16  # CLIENT_MULTI_STATEMENTS, in the client's connect flags


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
    params: list[list[Any]] = []

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
            params.append([name, prepared(entry), prepared(write.guarded_entries[name]), id, token])
        else:
            selects.append(f"SELECT id, %s, %s FROM {table} WHERE {held}")
            params.append([name, prepared(entry), id, token])
    for name, entry in write.guarded_entries.items():
        if name not in write.entries:
            selects.append(
                f"SELECT id, %s, %s FROM {table} WHERE {held} "
                f"AND NOT (cancel_requested OR terminate_requested)"
            )
            params.append([name, prepared(entry), id, token])
    # An INSERT ... SELECT each: one of several SELECTs joined by UNION ALL would go through
    # a temporary table in the server.
    upsert = f" ON DUPLICATE KEY UPDATE {document.column} = VALUES({document.column})"  # type: ignore[union-attr]
    for select, select_params in zip(selects, params, strict=True):
        statements.append(
            (
                f"INSERT INTO {journal.db_table} (instance_id, name, document) {select}{upsert}",
                select_params,
            )
        )
    # The put-back of the parked instances of a released key (store/parking.py), after the
    # row lock's read. Not conditioned on the lease, unlike the other statements: a batch
    # cannot make it depend on that read, and joining the holder's row to it (the same table
    # in a subquery of an UPDATE is refused here) cost the server 0.5 ms a release against
    # 0.13 ms. A write that lost its lease may then put its key's parked back: harmless, the
    # next claim parks them again while the key is full.
    if write.release is not None and write.unpark is not None:
        statements.append(
            (
                f"UPDATE {table} SET parked = 0 WHERE workflow = %s AND concurrency_key = %s "
                f"AND parked = 1",
                [*write.unpark],
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


def results(connection: Any, statements: list[Statement]) -> list[list[tuple[Any, ...]]]:
    """Send `statements` on `connection` in one round trip and read every result: each
    statement's rows (none for a statement that returns none; a CALL has its procedure's result sets, then one empty
    for its status). A statement's error is raised here; the server runs none after it.

    On a connection opened without CLIENT_MULTI_STATEMENTS (mysqlclient's `multi_statements`
    option turned off, or PyMySQL's default), one round trip each, the same statements. A
    CALL's rows are then its procedure's first result set (every procedure here has one at
    most)."""
    if (driver := _batch_driver(connection)) is not None:
        return _driver_results(connection, driver, statements)
    with connection.cursor() as cursor:
        return _cursor_results(cursor, statements)


def counts(connection: Any, statements: list[Statement]) -> list[int]:
    """Send `statements`, none of which returns rows, in one round trip as results() does, and
    return how many rows each one changed (MySQL's affected rows: found rows for an UPDATE,
    as Django's connections count them). The cursor's way sends them one at a time."""
    if (driver := _batch_driver(connection)) is not None:
        return _driver_results(connection, driver, statements, affected=True)
    changed: list[int] = []
    with connection.cursor() as cursor:
        for statement, params in statements:
            cursor.execute(statement, params)
            changed.append(cursor.rowcount)
    return changed


def _cursor_results(cursor: Any, statements: list[Statement]) -> list[list[tuple[Any, ...]]]:
    """results() through a Django cursor."""
    if len(statements) == 1 or not _client_flag(cursor.db.connection) & MULTI_STATEMENTS:
        rows: list[list[tuple[Any, ...]]] = []
        for statement, params in statements:
            cursor.execute(statement, params)
            rows.append(list(cursor.fetchall()))
            # a CALL's own status follows its procedure's result sets
            while cursor.nextset():
                cursor.fetchall()
        return rows
    cursor.execute(
        ";\n".join(statement for statement, _ in statements),
        [param for _, statement_params in statements for param in statement_params],
    )
    rows = [list(cursor.fetchall())]
    while cursor.nextset():
        rows.append(list(cursor.fetchall()))
    return rows


def _client_flag(driver: Any) -> int:
    """The flags the driver's connection was opened with (0 when it does not say)."""
    return int(getattr(driver, "client_flag", 0) or 0)


def _batch_driver(connection: Any) -> Any | None:
    """mysqlclient's own connection, to send a batch on without a cursor, or None for the
    cursor's way: a connection whose statements Django logs (DEBUG, a test's
    CaptureQueriesContext) or hands to execute_wrapper()s, another driver (PyMySQL has no
    store_result()), or one opened without CLIENT_MULTI_STATEMENTS.

    The cursor's way reads each result through Django's CursorWrapper and mysqlclient's
    cursor (a description, the warnings' count, the affected rows and the insert id of every
    statement, and Django's wrappers around each call): a three-step workflow's four writes
    took 1.14-1.24 ms of the worker's CPU that way, 0.67-0.89 ms this way
    (benchmarks/write_functions.py)."""
    if not direct(connection):
        return None
    driver = connection.connection
    if (
        driver is None
        or not hasattr(driver, "store_result")
        or not _client_flag(driver) & MULTI_STATEMENTS
    ):
        return None
    return driver


def _driver_results(
    connection: Any, driver: Any, statements: list[Statement], affected: bool = False
) -> Any:
    """results() on mysqlclient's connection: the statements bound as its cursor binds them
    (each parameter the driver's literal, into the query's bytes), sent with query(), each
    result read with store_result() and next_result(); with `affected`, each statement's
    count of changed rows in place of its rows (counts()). Errors are Django's, as a
    cursor's (its wrapper also marks the connection for close_if_unusable_or_obsolete())."""
    connection.validate_no_broken_transaction()
    query = ";\n".join(statement for statement, _ in statements).encode(driver.encoding)
    literal = driver.literal
    bound = query % tuple(
        literal(param) for _, statement_params in statements for param in statement_params
    )
    rows: list[Any] = []
    with connection.wrap_database_errors:
        try:
            driver.query(bound)
            while True:
                result = driver.store_result()
                if affected:
                    rows.append(driver.affected_rows())
                else:
                    rows.append(list(result.fetch_row(0)) if result is not None else [])
                if driver.next_result() == -1:
                    return rows
        except connection.Database.OperationalError as error:
            # as Django's cursor: errors that MySQL files under OperationalError but are
            # integrity errors (a NULL in a NOT NULL column, a CHECK constraint)
            if error.args and error.args[0] in MySQLCursorWrapper.codes_for_integrityerror:
                raise connection.Database.IntegrityError(*error.args) from error
            raise


def run_batch(connection: Any, statements: list[Statement]) -> list[tuple[Any, ...]]:
    """Send `statements` in one round trip, in one transaction (the caller's, or one of their
    own: START TRANSACTION ... COMMIT in the batch, on a connection in autocommit mode), and
    return the rows of the first.

    On an error, ROLLBACK undoes the batch's own transaction (a lost connection rolled back by
    itself)."""
    own = connection.get_autocommit() and not connection.in_atomic_block
    if own:
        statements = [("START TRANSACTION", []), *statements, ("COMMIT", [])]
    try:
        return results(connection, statements)[1 if own else 0]
    except BaseException:
        if own:
            rollback(connection)
        raise


def rollback(connection: Any) -> None:
    """ROLLBACK after an error in a transaction the store began itself."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("ROLLBACK")
    except DatabaseError:
        pass  # a lost connection rolled back by itself; the first error says why
