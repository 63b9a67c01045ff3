"""MySQL's and MariaDB's batches sent on mysqlclient's connection, without a cursor
(store/backends/mysql/batches.py): the same results as the cursor's way, Django's errors, the
batch's own transaction rolled back on an error; the cursor's way where Django logs or wraps the
statements."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from django.db import IntegrityError, OperationalError, connection
from django.test.utils import CaptureQueriesContext

from django_workflows.store.backends.mysql import batches as mysql_batches

pytestmark = pytest.mark.skipif(
    connection.vendor != "mysql", reason="only MySQL's and MariaDB's store sends batches"
)

VALUES = [
    "it's 100% 'quoted' \\ and \u00e9t\u00e9 \U0001f4e6",
    None,
    datetime(2026, 12, 3, 15, 4, 5, 123456),
    b"\x00\xff'%s",
    -7,
    12.5,
]
BATCH: list[mysql_batches.Statement] = [
    ("SELECT %s, %s, CAST(%s AS DATETIME(6)), CAST(%s AS BINARY), %s, %s", VALUES),
    ("DO %s", [0]),
    ("SELECT 1 FROM DUAL WHERE %s = 'nothing'", ["x"]),
    ("SELECT n FROM (SELECT 1 AS n UNION ALL SELECT 2) AS two ORDER BY n", []),
]


def by_cursor(statements: list[mysql_batches.Statement]) -> Any:
    """results() by the cursor's way: a statement wrapper makes the batch go through it."""
    seen: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        found = mysql_batches.results(connection, statements)
    assert seen, "the cursor's way was not taken"
    return found


def by_driver(statements: list[mysql_batches.Statement]) -> Any:
    connection.ensure_connection()
    assert mysql_batches._batch_driver(connection) is connection.connection
    return mysql_batches.results(connection, statements)


@pytest.mark.django_db
def test_the_driver_reads_what_the_cursor_reads() -> None:
    driven = by_driver(BATCH)
    assert driven == by_cursor(BATCH)
    assert driven[0] == [tuple(VALUES)]
    assert driven[1:] == [[], [], [(1,), (2,)]]


@pytest.mark.django_db
def test_logged_or_wrapped_statements_go_through_a_cursor(settings: Any) -> None:
    connection.ensure_connection()
    assert mysql_batches._batch_driver(connection) is not None
    with connection.execute_wrapper(lambda execute, *args: execute(*args)):
        assert mysql_batches._batch_driver(connection) is None
    with CaptureQueriesContext(connection) as captured:
        assert mysql_batches.results(connection, BATCH[1:]) == [[], [], [(1,), (2,)]]
    assert [query["sql"] for query in captured.captured_queries][0].startswith("DO 0;")


@pytest.fixture
def scratch() -> Any:
    """A table of its own whose `n` must be positive: MySQL and MariaDB file a CHECK
    constraint's failure as an OperationalError (3819, 4025), which Django's cursor raises as
    an IntegrityError."""
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE dw_test_batches (n INT NOT NULL CHECK (n > 0))")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE dw_test_batches")


def scratch_rows() -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT n FROM dw_test_batches ORDER BY n")
        return list(cursor.fetchall())


@pytest.mark.django_db(transaction=True)
def test_an_error_in_the_batch_is_djangos_and_its_own_transaction_is_rolled_back(
    scratch: Any,
) -> None:
    insert = "INSERT INTO dw_test_batches (n) VALUES (%s)"
    with pytest.raises(IntegrityError):
        mysql_batches.run_batch(connection, [(insert, [1]), (insert, [0]), (insert, [3])])
    assert scratch_rows() == []
    assert mysql_batches.run_batch(connection, [(insert, [1]), ("SELECT 42", [])]) == []
    assert scratch_rows() == [(1,)]
    with pytest.raises(OperationalError):  # the server's error, raised as Django's
        mysql_batches.run_batch(connection, [(insert, [2]), ("SELECT nope FROM DUAL", [])])
    assert scratch_rows() == [(1,)]
    # the connection is fine for whatever comes next
    assert mysql_batches.results(connection, [("SELECT 5", []), ("SELECT 6", [])]) == [
        [(5,)],
        [(6,)],
    ]
