"""The store's hot-path statements on the driver's own cursor (store/backends/driver.py): one
cursor kept per thread and connection, Django's errors, a new cursor once a killed connection is
replaced, and Django's cursor where it logs or wraps the statements."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import DatabaseError, connection, connections

from django_workflows.store.backends import driver


def kept() -> Any:
    return driver._local.cursors[connection.alias][1]


@pytest.mark.django_db
def test_one_cursor_per_thread_and_connection() -> None:
    assert driver.fetch(connection, "SELECT %s, %s", [1, "a"]) == [(1, "a")]
    cursor = kept()
    assert driver.fetch(connection, "SELECT %s", [2]) == [(2,)]
    assert kept() is cursor
    theirs: list[Any] = []

    def other_thread() -> None:
        try:
            theirs.append(driver.fetch(connection, "SELECT %s", [3]))
            theirs.append(kept())
        finally:
            connections.close_all()

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert theirs[0] == [(3,)]
    assert theirs[1] is not cursor


@pytest.mark.django_db
def test_wrapped_statements_go_through_a_django_cursor() -> None:
    seen: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        assert driver.fetch(connection, "SELECT %s", [4]) == [(4,)]
    assert seen == ["SELECT %s"]


@pytest.mark.django_db(transaction=True)  # no test transaction for the error to break
def test_errors_are_djangos_and_the_cursor_goes_on() -> None:
    driver.fetch(connection, "SELECT 1", [])
    cursor = kept()
    with pytest.raises(DatabaseError) as raised:
        driver.fetch(connection, "SELECT x FROM dw_no_such_table", [])
    assert type(raised.value).__module__ == "django.db.utils"
    assert driver.fetch(connection, "SELECT %s", [5]) == [(5,)]
    assert kept() is cursor


def own_id() -> int:
    sql = (
        "SELECT pg_backend_pid()" if connection.vendor == "postgresql" else "SELECT CONNECTION_ID()"
    )
    return int(driver.fetch(connection, sql, [])[0][0])


def kill_from_another_connection(id: int) -> None:
    def kill() -> None:
        try:
            with connections["default"].cursor() as cursor:
                if connection.vendor == "postgresql":
                    cursor.execute("SELECT pg_terminate_backend(%s)", [id])
                else:
                    cursor.execute(f"KILL {int(id)}")
        finally:
            connections.close_all()

    thread = threading.Thread(target=kill)
    thread.start()
    thread.join()


@pytest.mark.django_db(transaction=True)
def test_a_killed_connection_gets_a_new_cursor_once_replaced() -> None:
    if connection.vendor not in ("postgresql", "mysql"):
        pytest.skip("SQLite: no server whose connections could be killed")
    before = own_id()
    cursor = kept()
    kill_from_another_connection(before)
    with pytest.raises(DatabaseError) as raised:
        driver.fetch(connection, "SELECT %s", [6])
    assert type(raised.value).__module__ == "django.db.utils"
    # Django's handling of the error marked the connection unusable, as a cursor's would
    connection.close_if_unusable_or_obsolete()
    assert connection.connection is None
    assert driver.fetch(connection, "SELECT %s", [7]) == [(7,)]
    assert own_id() != before
    assert kept() is not cursor
