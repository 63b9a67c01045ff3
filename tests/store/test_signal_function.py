"""PostgreSQL's signal function (migration 0004_signal_routine): a signal outside a transaction
calls dw_signal_v1, which takes the signal lock, returns the earlier signal of the same dedupe
id, or inserts the signal, wakes the instances waiting for it and notifies the workers; inside
a transaction, with a payload a codec seals, or without the function (dropped, or not the
role's to call), signal() runs in a transaction as before; migrating back drops it."""

from __future__ import annotations

from importlib import import_module
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection, transaction

import django_workflows as wf
from django_workflows.models import Signal
from django_workflows.store import payloads
from django_workflows.store.backends import backend, routines
from django_workflows.store.backends.postgresql.signals import SIGNATURE
from tests.store.functions import column_types, has_function, notified, parameter_types

pytestmark = [
    pytest.mark.django_db(transaction=True),  # outside a transaction; the function is dropped
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="only PostgreSQL's store has functions"
    ),
]

FILES = import_module("django_workflows.migrations.0004_signal_routine").ROUTINES


def calls(sent: list[str]) -> list[str]:
    return [sql for sql in sent if sql.startswith("SELECT * FROM dw_signal_v1(")]


@pytest.fixture
def waiting(define: Any) -> Any:
    """`waits`: the payload of signal "paid" with the instance's key."""

    @define("waits")
    def waits(ctx: Any, key: str | None) -> Any:
        return ctx.wait_for_signal("paid", "paid", key=key)

    return waits


def test_its_parameters_are_the_signals_columns() -> None:
    """A column's type changed in the model without a new version of the function fails here."""
    columns = ["name", "key", "dedupe_id", "payload", "created_at"]
    types = column_types(Signal._meta.db_table)
    parameters = parameter_types(SIGNATURE)

    assert parameters == [types[column] for column in columns]
    assert {field.column for field in Signal._meta.concrete_fields} == {"id", *columns}


@pytest.mark.parametrize("key", ["order-1", None])
def test_a_signal_calls_it_wakes_its_waiter_and_notifies_the_workers(
    sent: list[str], listening: Any, waiting: Any, key: str | None
) -> None:
    wf.start("waits", key, id="waiting")
    assert wf.drain() == 1
    assert notified(listening) == 1  # the start's

    result = wf.signal("paid", None, key=key)

    assert len(calls(sent)) == 1
    assert (result.created, result.woken, result.key) == (True, 1, key)
    assert notified(listening) == 1
    assert wf.drain() == 1
    assert wf.get_status("waiting").status == "completed"


def test_a_payload_reaches_the_waiter_whether_a_codec_seals_it_or_not(
    sent: list[str], waiting: Any
) -> None:
    wf.start("waits", "order-2", id="paid-in-full")
    wf.drain()

    result = wf.signal("paid", {"amount": 42}, key="order-2")

    sealed = payloads.seals_signal({"amount": 42})  # a codec binds it to the row's id
    assert len(calls(sent)) == (0 if sealed else 1)
    assert result.woken == 1
    assert wf.drain() == 1
    assert wf.get_status("paid-in-full").output == {"amount": 42}


def test_the_same_dedupe_id_again_returns_the_first_and_notifies_no_one(
    sent: list[str], listening: Any
) -> None:
    first = wf.signal("delivered", None, key="order-3", id="TRK1")
    assert notified(listening) == 1

    again = wf.signal("delivered", None, key="order-3", id="TRK1")

    assert len(calls(sent)) == 2
    assert (again.created, again.signal_id, again.woken) == (False, first.signal_id, 0)
    assert notified(listening) == 0
    assert Signal.objects.filter(name="delivered").count() == 1


def test_the_same_dedupe_id_with_another_key_is_refused(sent: list[str]) -> None:
    wf.signal("delivered", None, key="order-4", id="TRK2")

    with pytest.raises(wf.WorkflowIdConflictError, match="was sent before with key 'order-4'"):
        wf.signal("delivered", None, key="order-5", id="TRK2")

    assert len(calls(sent)) == 2
    assert Signal.objects.filter(name="delivered").count() == 1


def test_inside_a_transaction_it_is_not_called(sent: list[str], waiting: Any) -> None:
    wf.start("waits", "order-6", id="in-a-transaction")
    wf.drain()

    with transaction.atomic():
        result = wf.signal("paid", None, key="order-6")

    assert not calls(sent)
    assert result.woken == 1
    assert wf.drain() == 1


def test_without_it_a_transaction_records_the_signal(
    sent: list[str], listening: Any, waiting: Any
) -> None:
    wf.start("waits", "order-7", id="without-function")
    wf.drain()
    assert notified(listening) == 1
    with connection.schema_editor() as editor:
        routines.drop(editor, FILES)
    try:
        result = wf.signal("paid", None, key="order-7")
        woken = notified(listening)
    finally:
        with connection.schema_editor() as editor:
            routines.create(editor, FILES)

    assert not calls(sent)
    assert (result.created, result.woken, woken) == (True, 1, 1)
    assert has_function(SIGNATURE)
    assert wf.drain() == 1


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


def test_migrating_back_drops_it() -> None:
    call_command("migrate", "django_workflows", "0003", verbosity=0)
    try:
        dropped = not has_function(SIGNATURE)
    finally:
        call_command("migrate", "django_workflows", verbosity=0)

    assert dropped
    assert has_function(SIGNATURE)
