"""PostgreSQL's write functions (migration 0002_routines): the writes of journal entries alone go
through dw_journal_write_v1 and an instance's last write through dw_final_write_v1, with the same
outcome as the statements they replace (its end announced to an awaiting result() too); without
them (a database made without migrations) the statements are sent as before; migrating back
drops them."""

from __future__ import annotations

from importlib import import_module
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

import django_workflows as wf
from django_workflows.store.backends import backend, routines
from django_workflows.store.backends.base import ENDED_CHANNEL
from django_workflows.store.instances import mark_awaited
from tests.store.runs import run

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the function is dropped and made again
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="only PostgreSQL's store has functions"
    ),
]


def has_functions() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT to_regprocedure('dw_journal_write_v1(text, text, jsonb)') IS NOT NULL AND "
            "to_regprocedure('dw_final_write_v1(text, text, jsonb, text, jsonb, jsonb, "
            "timestamptz)') IS NOT NULL"
        )
        return bool(cursor.fetchone()[0])


def calls(sent: list[str], function: str) -> list[str]:
    return [sql for sql in sent if f"FROM {function}(" in sql]


def test_the_step_writes_and_the_last_go_through_the_functions(
    two_steps: Any, sent: list[str]
) -> None:
    assert has_functions()

    journal = run(two_steps, "through")

    # a's start and end with b's start (a's start rides on the claim), then b's end with the
    # outcome
    assert len(calls(sent, "dw_journal_write_v1")) == 1
    assert len(calls(sent, "dw_final_write_v1")) == 1
    assert journal[-2:] == [("a", "completed"), ("b", "completed")]


def test_the_last_write_announces_an_awaited_end(two_steps: Any, sent: list[str]) -> None:
    wf.start(two_steps, 1, id="awaited")
    mark_awaited("default", "awaited")  # what a waiting result() does
    raw = connection.get_new_connection(connection.get_connection_params())
    try:
        raw.autocommit = True
        raw.execute(f"LISTEN {ENDED_CHANNEL}")
        assert wf.drain() == 1
        payloads = [n.payload for n in raw.notifies(timeout=5, stop_after=1)]
    finally:
        raw.close()

    assert payloads == ["awaited"]
    assert len(calls(sent, "dw_final_write_v1")) == 1
    assert wf.get_status("awaited").output == 4


def test_without_the_functions_the_statements_are_sent(two_steps: Any, sent: list[str]) -> None:
    files = import_module("django_workflows.migrations.0002_routines").ROUTINES
    with connection.schema_editor() as editor:
        routines.drop(editor, files)
    try:
        journal = run(two_steps, "without")
    finally:
        with connection.schema_editor() as editor:
            routines.create(editor, files)

    assert not calls(sent, "dw_journal_write_v1") + calls(sent, "dw_final_write_v1")
    assert len([sql for sql in sent if sql.startswith("WITH held AS")]) == 2
    assert journal[-2:] == [("a", "completed"), ("b", "completed")]
    assert has_functions()


def test_without_the_right_to_call_them_the_statements_are_sent(
    two_steps: Any, sent: list[str]
) -> None:
    """A database whose default privileges keep EXECUTE from PUBLIC: the role the worker
    connects as may not call them (here the owner revokes its own)."""
    functions = [
        "dw_journal_write_v1(text, text, jsonb)",
        "dw_final_write_v1(text, text, jsonb, text, jsonb, jsonb, timestamptz)",
    ]
    store = backend(connection.alias)
    with connection.cursor() as cursor:
        for function in functions:
            cursor.execute(f"REVOKE EXECUTE ON FUNCTION {function} FROM PUBLIC, CURRENT_USER")
    store._functions.forget()
    try:
        journal = run(two_steps, "forbidden")
    finally:
        with connection.cursor() as cursor:
            for function in functions:
                cursor.execute(f"GRANT EXECUTE ON FUNCTION {function} TO PUBLIC, CURRENT_USER")
        store._functions.forget()

    assert not calls(sent, "dw_journal_write_v1") + calls(sent, "dw_final_write_v1")
    assert journal[-2:] == [("a", "completed"), ("b", "completed")]


def test_migrating_back_drops_it() -> None:
    call_command("migrate", "django_workflows", "0001", verbosity=0)
    try:
        dropped = not has_functions()
    finally:
        call_command("migrate", "django_workflows", verbosity=0)

    assert dropped
    assert has_functions()
