"""MySQL's and MariaDB's signal procedure (migration 0005_mysql_signal_routine): its parameters
are the signal's columns and the wake-up counter's shard; the first count of a counter row is
made after the call; an error inside it rolls its transaction back. What it shares with
PostgreSQL's function is tested in test_signal_routines.py."""

from __future__ import annotations

import pytest
from django.db import OperationalError, connection

import django_workflows as wf
from django_workflows.models import Signal, WakeupCounter

pytestmark = [
    pytest.mark.django_db(transaction=True),  # outside a transaction, as a web request's
    pytest.mark.skipif(
        connection.vendor != "mysql", reason="only MySQL's and MariaDB's store has procedures"
    ),
]


def wakeup_counts() -> int:
    return sum(WakeupCounter.objects.values_list("count", flat=True))


def test_its_parameters_are_the_signals_columns() -> None:
    """A column's type, character set or collation changed without a new version of the
    procedure fails here."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT PARAMETER_NAME, DTD_IDENTIFIER, CHARACTER_SET_NAME, COLLATION_NAME "
            "FROM information_schema.PARAMETERS WHERE SPECIFIC_SCHEMA = DATABASE() "
            "AND SPECIFIC_NAME = 'dw_signal_v1' ORDER BY ORDINAL_POSITION"
        )
        parameters = cursor.fetchall()
        cursor.execute(
            "SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, CHARACTER_SET_NAME, COLLATION_NAME "
            "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
            "AND TABLE_NAME IN ('django_workflows_signal', 'django_workflows_wakeupcounter')"
        )
        columns = {(table, column): rest for table, column, *rest in cursor.fetchall()}
    expected = [
        ("p_name", *columns[("django_workflows_signal", "name")]),
        ("p_key", *columns[("django_workflows_signal", "key")]),
        ("p_dedupe_id", *columns[("django_workflows_signal", "dedupe_id")]),
        ("p_payload", *columns[("django_workflows_signal", "payload")]),
        ("p_now", *columns[("django_workflows_signal", "created_at")]),
        ("p_shard", *columns[("django_workflows_wakeupcounter", "shard")]),
    ]
    assert [(name, type.lower(), *rest) for name, type, *rest in parameters] == [
        (name, type.lower(), *rest) for name, type, *rest in expected
    ]
    columns_of_signal = {field.column for field in Signal._meta.concrete_fields}
    assert columns_of_signal == {"id", "name", "key", "dedupe_id", "payload", "created_at"}


def test_the_first_count_of_a_shard_is_made_after_the_call(sent: list[str]) -> None:
    WakeupCounter.objects.all().delete()

    wf.signal("delivered", None, key="order-10")

    assert len([sql for sql in sent if sql.startswith("CALL dw_signal_v1(")]) == 1
    assert wakeup_counts() == 1


def test_an_error_inside_rolls_its_transaction_back() -> None:
    """Another transaction holds the signal lock past this connection's lock wait timeout:
    the call fails, leaves no transaction open and stores nothing."""
    wf.signal("delivered", None, key="warm-up")  # the probe of the procedure, once a process
    holder = connection.get_new_connection(connection.get_connection_params())
    try:
        with holder.cursor() as cursor:
            cursor.execute("START TRANSACTION")
            cursor.execute("SELECT name FROM django_workflows_storelock FOR UPDATE")
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION innodb_lock_wait_timeout = 1")
        with pytest.raises(OperationalError):
            wf.signal("delivered", None, key="order-11")
        with connection.cursor() as cursor:
            cursor.execute("SELECT @@in_transaction")
            assert cursor.fetchone()[0] == 0
    finally:
        holder.rollback()
        holder.close()
        connection.close()  # the session's lock wait timeout with it
    assert not Signal.objects.filter(key="order-11").exists()
