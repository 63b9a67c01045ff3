"""PostgreSQL's signal function (migration 0004_signal_routine): its parameters are the signal's
columns, and without the right to call it signal() runs in a transaction as before. What it
shares with MySQL's and MariaDB's procedure is tested in test_signal_routines.py."""

from __future__ import annotations

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows.models import Signal
from django_workflows.store.backends import backend
from django_workflows.store.backends.postgresql.signals import SIGNATURE
from tests.store.functions import column_types, parameter_types

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

    assert not [sql for sql in sent if sql.startswith("SELECT * FROM dw_signal_v1(")]
    assert result.created and Signal.objects.filter(pk=result.signal_id).exists()
