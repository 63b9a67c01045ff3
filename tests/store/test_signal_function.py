"""PostgreSQL's signal function (migration 0004_signal_routine): its parameters are the signal's
columns; inside the caller's transaction its lock and its NOTIFY last until the commit, and a
rollback takes the signal back; without the right to call it signal() runs in a transaction as
before. What it shares with MySQL's and MariaDB's procedure is tested in
test_signal_routines.py."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction

import django_workflows as wf
from django_workflows.models import Signal
from django_workflows.store.backends import backend
from django_workflows.store.backends.postgresql.backend import LOCK_CLASS, SIGNAL_LOCK
from django_workflows.store.backends.postgresql.signals import SIGNATURE
from tests.store.functions import column_types, notified, parameter_types

pytestmark = [
    pytest.mark.django_db(transaction=True),  # outside a transaction; EXECUTE is revoked
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="only PostgreSQL's store has functions"
    ),
]


def test_its_parameters_are_the_signals_columns() -> None:
    """A column's type changed in the model without a new version of the function fails here."""
    columns = ["name", "key", "dedupe_id", "payload", "created_at"]
    types = column_types(Signal._meta.db_table)
    parameters = parameter_types(SIGNATURE)

    assert parameters == [types[column] for column in columns]
    assert {field.column for field in Signal._meta.concrete_fields} == {"id", *columns}


def calls(sent: list[str]) -> list[str]:
    return [sql for sql in sent if sql.startswith("SELECT * FROM dw_signal_v1(")]


def signal_lock_taken() -> bool:
    """Whether another session holds the signal lock, asked from a connection of its own."""
    other = connection.get_new_connection(connection.get_connection_params())
    try:
        row = other.execute(
            "SELECT pg_try_advisory_lock_shared(%s, %s)", [LOCK_CLASS, SIGNAL_LOCK]
        ).fetchone()
        return not row[0]
    finally:
        other.close()


def test_inside_a_transaction_its_lock_and_notify_last_until_the_commit(
    sent: list[str], listening: Any
) -> None:
    with transaction.atomic():
        result = wf.signal("delivered", None, key="order-12")
        held = signal_lock_taken()
        early = len(list(listening.notifies(timeout=0.3, stop_after=1)))

    assert len(calls(sent)) == 1
    assert result.created
    assert (held, early) == (True, 0)
    assert not signal_lock_taken()
    assert notified(listening) == 1


def test_a_rollback_takes_the_signal_back(sent: list[str], listening: Any) -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        wf.signal("delivered", None, key="order-13")
        raise RuntimeError("the view failed")

    assert len(calls(sent)) == 1
    assert not Signal.objects.filter(key="order-13").exists()
    assert notified(listening) == 0


def test_without_the_right_to_call_it_a_transaction_records_the_signal(
    sent: list[str],
) -> None:
    """A database whose default privileges keep EXECUTE from PUBLIC (here the owner revokes
    its own)."""
    store = backend(connection.alias)
    with connection.cursor() as cursor:
        cursor.execute(f"REVOKE EXECUTE ON FUNCTION {SIGNATURE} FROM PUBLIC, CURRENT_USER")
    store.forget_routines()
    try:
        result = wf.signal("delivered", None, key="order-8")
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"GRANT EXECUTE ON FUNCTION {SIGNATURE} TO PUBLIC, CURRENT_USER")
        store.forget_routines()

    assert not calls(sent)
    assert result.created and Signal.objects.filter(pk=result.signal_id).exists()
