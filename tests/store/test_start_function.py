"""PostgreSQL's start function (migration 0003_start_routine): a start calls dw_start_v1, which
inserts the instance's row unless its id exists and notifies the workers, with the same row as
the statement it replaces; inside the caller's transaction the NOTIFY waits for the commit, and
a rollback takes the start back; without it (dropped, or not the role's to call) the statement
is sent; migrating back drops it."""

from __future__ import annotations

from importlib import import_module
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection, transaction

import django_workflows as wf
from django_workflows.models import WorkflowInstance
from django_workflows.store.backends import backend, routines
from django_workflows.store.backends.params import row_fields
from django_workflows.store.backends.postgresql.starts import SIGNATURE
from tests.store.functions import column_types, has_function, notified, parameter_types

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the function is dropped and made again
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="only PostgreSQL's store has functions"
    ),
]

FILES = import_module("django_workflows.migrations.0003_start_routine").ROUTINES


def calls(sent: list[str]) -> list[str]:
    return [sql for sql in sent if sql.startswith("SELECT dw_start_v1(")]


def row(id: str) -> dict[str, Any]:
    """The instance's row but what differs from one start to another, its input as started (a
    codec encrypts each instance's input under its own id)."""
    values = WorkflowInstance.objects.filter(pk=id).values().get()
    for varying in ("id", "created_at", "updated_at", "wake_at"):
        values.pop(varying)
    values["input"] = wf.get_status(id).input
    return values


def test_its_parameters_are_the_instances_columns_in_the_starts_order() -> None:
    """A column added to the model without a new version of the function fails here."""
    columns = [
        field.column
        for field in row_fields(WorkflowInstance, connection)
        if field.column != "signal_cursor"
    ]
    types = column_types(WorkflowInstance._meta.db_table)
    parameters = parameter_types(SIGNATURE)

    assert parameters == [types[column] for column in columns]


def test_a_start_calls_it_and_notifies_the_workers(
    sent: list[str], listening: Any, define: Any
) -> None:
    define("started-alone")(lambda ctx, n: n)

    instance = wf.start("started-alone", {"n": 1}, id="through-function")

    assert len(calls(sent)) == 1
    assert notified(listening) == 1
    assert instance.status == "pending"
    assert wf.get_status("through-function").input == {"n": 1}


def test_the_same_id_again_inserts_nothing_and_notifies_no_one(
    sent: list[str], listening: Any, define: Any
) -> None:
    define("started-alone")(lambda ctx, n: n)
    wf.start("started-alone", {"n": 1}, id="twice")
    assert notified(listening) == 1

    again = wf.start("started-alone", {"n": 1}, id="twice")

    assert len(calls(sent)) == 2
    assert notified(listening) == 0
    assert again.id == "twice" and WorkflowInstance.objects.filter(pk="twice").count() == 1


def test_inside_a_transaction_it_notifies_the_workers_at_the_commit(
    sent: list[str], listening: Any, define: Any
) -> None:
    define("started-alone")(lambda ctx, n: n)

    with transaction.atomic():
        instance = wf.start("started-alone", {"n": 1}, id="in-a-transaction")
        early = len(list(listening.notifies(timeout=0.3, stop_after=1)))
        # the same id with another input: refused, and the transaction goes on
        with pytest.raises(wf.WorkflowIdConflictError):
            wf.start("started-alone", {"n": 2}, id="in-a-transaction")

    assert len(calls(sent)) == 2
    assert (instance.created, early) == (True, 0)
    assert notified(listening) == 1
    assert wf.get_status("in-a-transaction").input == {"n": 1}
    assert wf.drain() == 1


def test_a_rollback_takes_the_start_back(sent: list[str], listening: Any, define: Any) -> None:
    define("started-alone")(lambda ctx, n: n)

    with pytest.raises(RuntimeError), transaction.atomic():
        wf.start("started-alone", {"n": 1}, id="rolled-back")
        raise RuntimeError("the order's rows failed")

    assert len(calls(sent)) == 1
    assert not WorkflowInstance.objects.filter(pk="rolled-back").exists()
    assert notified(listening) == 0


def test_without_it_the_statement_writes_the_same_row(
    sent: list[str], listening: Any, define: Any
) -> None:
    define("started-alone")(lambda ctx, n: n)
    wf.start("started-alone", {"n": 1}, id="with-function")
    assert notified(listening) == 1
    with connection.schema_editor() as editor:
        routines.drop(editor, FILES)
    try:
        wf.start("started-alone", {"n": 1}, id="without-function")
        woken = notified(listening)
    finally:
        with connection.schema_editor() as editor:
            routines.create(editor, FILES)

    assert len(calls(sent)) == 1
    assert woken == 1
    assert row("without-function") == row("with-function")
    assert has_function(SIGNATURE)


def test_without_the_right_to_call_it_the_statement_is_sent(sent: list[str], define: Any) -> None:
    """A database whose default privileges keep EXECUTE from PUBLIC (here the owner revokes
    its own)."""
    define("started-alone")(lambda ctx, n: n)
    store = backend(connection.alias)
    with connection.cursor() as cursor:
        cursor.execute(f"REVOKE EXECUTE ON FUNCTION {SIGNATURE} FROM PUBLIC, CURRENT_USER")
    store.forget_routines()
    try:
        wf.start("started-alone", {"n": 1}, id="forbidden")
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"GRANT EXECUTE ON FUNCTION {SIGNATURE} TO PUBLIC, CURRENT_USER")
        store.forget_routines()

    assert not calls(sent)
    assert WorkflowInstance.objects.get(pk="forbidden").status == "pending"


def test_migrating_back_drops_it() -> None:
    call_command("migrate", "django_workflows", "0002", verbosity=0)
    try:
        dropped = not has_function(SIGNATURE)
    finally:
        call_command("migrate", "django_workflows", verbosity=0)

    assert dropped
    assert has_function(SIGNATURE)
