"""The statements of a drain's hot path (the lease holder's writes, the claim) sent on the
database driver's own cursor, kept for each thread's connection, rather than through a new
Django cursor each.

A Django cursor is a CursorWrapper around a new driver cursor, and each of its calls goes
through DatabaseErrorWrapper: on PostgreSQL 85-116 us of the worker's CPU for a one-row
statement against 51-71 us this way (psycopg 3, either binding; benchmarks/statement_cpu.py). The statements, their errors (Django's, as a cursor raises them, the connection
marked for close_if_unusable_or_obsolete()) and the checks a cursor makes first (the
connection's health check, a broken transaction) are the same.

Where Django must see the statements the cursor's way stays: a connection whose statements it
logs (DEBUG, a test's CaptureQueriesContext) or hands to execute_wrapper()s.
"""

from __future__ import annotations

import threading
from typing import Any

_local = threading.local()  # this thread's kept cursors: alias -> (driver connection, cursor)


def direct(connection: Any) -> bool:
    """Whether statements on `connection` may skip Django's cursor: nothing logs or wraps
    them. Also makes the checks a new cursor would: the health check (CONN_HEALTH_CHECKS),
    and that this thread may use the connection."""
    if connection.execute_wrappers or connection.queries_logged:
        return False
    connection.close_if_health_check_failed()
    connection.validate_thread_sharing()
    return True


def fetch(connection: Any, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    """The rows of `sql`, a statement that returns rows, run on `connection`."""
    if not direct(connection):
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return list(cursor.fetchall())
    cursor = _kept_cursor(connection)
    connection.validate_no_broken_transaction()
    with connection.wrap_database_errors:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def _kept_cursor(connection: Any) -> Any:
    """This thread's driver cursor on `connection`, made as Django makes its cursors
    (create_cursor(): on PostgreSQL, the time zone's loader), anew when the connection is."""
    if connection.connection is None:
        connection.ensure_connection()
    kept = getattr(_local, "cursors", None)
    if kept is None:
        kept = _local.cursors = {}
    entry = kept.get(connection.alias)
    if entry is None or entry[0] is not connection.connection or getattr(entry[1], "closed", False):
        with connection.wrap_database_errors:
            entry = kept[connection.alias] = (connection.connection, connection.create_cursor())
    return entry[1]
