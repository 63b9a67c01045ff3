"""PostgreSQL's dw_journal_write (migration 0016): the writes of journal entries alone go
through it, with the same outcome as the statement they replace; without it (a database made
without migrations) the statement is sent as before; migrating back drops it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

import django_workflows as wf
from django_workflows.models import JournalEntry
from django_workflows.store.backends import backend

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the function is dropped and made again
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="only PostgreSQL's store has functions"
    ),
]


def has_function() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regprocedure('dw_journal_write(text, text, jsonb)') IS NOT NULL")
        return bool(cursor.fetchone()[0])


@pytest.fixture
def sent() -> Iterator[list[str]]:
    """The statements this thread's connection sends."""
    statements: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        yield statements


@pytest.fixture
def two_steps(define: Any) -> Any:
    @define("two-steps")
    def two_steps(ctx: Any, n: int) -> int:
        a = ctx.step("a", lambda step: n + 1)
        return ctx.step("b", lambda step: a * 2)

    return two_steps


def run(workflow: Any, id: str) -> list[tuple[str, Any]]:
    wf.start(workflow, 20, id=id)
    wf.drain()
    assert wf.get_status(id).status == "completed"
    assert wf.get_status(id).output == 42
    return [
        (name, document["status"])
        for name, document in JournalEntry.objects.filter(instance_id=id).values_list(
            "name", "document"
        )
    ]


def test_the_step_writes_go_through_the_function(two_steps: Any, sent: list[str]) -> None:
    assert has_function()

    journal = run(two_steps, "through")

    calls = [sql for sql in sent if "FROM dw_journal_write(" in sql]
    # a's start, a's end with b's start, then b's end with the outcome: one statement
    assert len(calls) == 2
    assert journal[-2:] == [("a", "completed"), ("b", "completed")]


def test_without_the_function_the_statement_is_sent(two_steps: Any, sent: list[str]) -> None:
    store = backend(connection.alias)
    with connection.schema_editor() as editor:
        store.drop_functions(editor)
    try:
        journal = run(two_steps, "without")
    finally:
        with connection.schema_editor() as editor:
            store.create_functions(editor)

    assert not [sql for sql in sent if "FROM dw_journal_write(" in sql]
    assert len([sql for sql in sent if sql.startswith("WITH held AS")]) == 3
    assert journal[-2:] == [("a", "completed"), ("b", "completed")]
    assert has_function()


def test_migrating_back_drops_it() -> None:
    call_command("migrate", "django_workflows", "0015", verbosity=0)
    try:
        dropped = not has_function()
    finally:
        call_command("migrate", "django_workflows", verbosity=0)

    assert dropped
    assert has_function()
