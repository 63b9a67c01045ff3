"""MySQL's and MariaDB's write procedures (migration 0002_routines): the writes of journal
entries alone go through dw_journal_write_v1 and an instance's last write through
dw_final_write_v1, with the same outcome as the batch of statements they replace: a guarded entry kept out while a cancel is
requested, nothing written without the lease; a write they do not carry, or a database without
them, gets the statements; migrating back drops them."""

from __future__ import annotations

from datetime import timedelta
from importlib import import_module
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection, transaction

import django_workflows as wf
from django_workflows import clock
from django_workflows.engine.registry import registry
from django_workflows.models import Status, WorkflowInstance
from django_workflows.store import claims
from django_workflows.store import instances as store
from django_workflows.store.backends import routines
from tests.store.runs import journal, run

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the procedures are dropped and made again
    pytest.mark.skipif(
        connection.vendor != "mysql", reason="only MySQL's and MariaDB's store has procedures"
    ),
]


def has_procedures() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() "
            "AND ROUTINE_NAME IN ('dw_journal_write_v1', 'dw_final_write_v1')"
        )
        return cursor.fetchone()[0] == 2


def calls(sent: list[str], procedure: str) -> list[str]:
    return [sql for sql in sent if f"CALL {procedure}(" in sql]


def leased(workflow: Any, id: str, *, token: str = "tok") -> str:
    """Start `id` and claim it under `token`."""
    wf.start(workflow, 20, id=id)
    now = clock.now()
    claimed = claims.claim(
        "default",
        owner="test",
        token=token,
        now=now,
        lease_until=now + timedelta(minutes=5),
        limit=1,
        workflows=registry.pairs(None),
    ).instances
    assert [instance.id for instance in claimed] == [id]
    return token


def step(status: str) -> dict[str, Any]:
    return {"kind": "step", "status": status, "attempt": 1}


def test_the_step_writes_and_the_last_go_through_the_procedures(
    two_steps: Any, sent: list[str]
) -> None:
    assert has_procedures()

    entries = run(two_steps, "through")

    # a's start and end with b's start (a's start rides on the claim), then b's end with the
    # outcome
    assert len(calls(sent, "dw_journal_write_v1")) == 1
    assert len(calls(sent, "dw_final_write_v1")) == 1
    assert entries == [("a", "completed"), ("b", "completed")]
    row = WorkflowInstance.objects.get(pk="through")
    assert (row.lease_token, row.lease_until, row.wake_at) == (None, None, None)


def test_a_guarded_entry_is_kept_out_while_a_cancel_is_requested(
    two_steps: Any, sent: list[str]
) -> None:
    token = leased(two_steps, "guarded")
    WorkflowInstance.objects.filter(pk="guarded").update(
        cancel_requested=True, cancel_reason='"stop"'
    )
    write = store.InstanceWrite(
        now=clock.now(),
        entries={"a": step("completed"), "b": step("failed")},
        guarded_entries={"b": step("running"), "c": step("running")},
    )

    flags = store.write("default", "guarded", token, write)

    # three rows: statements; then a's and the same-named b's through the procedure
    assert flags is not None and flags.cancel_requested and not flags.terminate_requested
    assert journal("guarded") == [("a", "completed"), ("b", "failed")]
    assert calls(sent, "dw_journal_write_v1") == []
    again = store.InstanceWrite(
        now=clock.now(),
        entries={"b": step("completed")},
        guarded_entries={"b": step("running"), "c": step("running")},
    )
    assert store.write("default", "guarded", token, again) is not None
    assert len(calls(sent, "dw_journal_write_v1")) == 1
    assert journal("guarded") == [("a", "completed"), ("b", "completed")]


def test_without_a_cancel_the_guarded_entry_wins(two_steps: Any, sent: list[str]) -> None:
    token = leased(two_steps, "retried")
    write = store.InstanceWrite(
        now=clock.now(),
        entries={"a": step("failed")},
        guarded_entries={"a": step("running"), "b": step("running")},
    )

    flags = store.write("default", "retried", token, write)

    assert flags is not None and not flags.cancel_requested
    assert len(calls(sent, "dw_journal_write_v1")) == 1
    assert journal("retried") == [("a", "running"), ("b", "running")]


def test_without_the_lease_nothing_is_written(two_steps: Any, sent: list[str]) -> None:
    leased(two_steps, "lost")
    before = WorkflowInstance.objects.get(pk="lost")
    journal_write = store.InstanceWrite(
        now=clock.now(), entries={"a": step("completed")}, guarded_entries={}
    )
    final = store.InstanceWrite(
        now=clock.now(),
        entries={"b": step("completed")},
        changes={"status": Status.COMPLETED, "output": 1, "error": None},
        release=store.Release(None, [], 0, had_waits=False),
    )

    assert store.write("default", "lost", "another token", journal_write) is None
    assert store.write("default", "lost", "another token", final) is None

    assert len(calls(sent, "dw_journal_write_v1")) == len(calls(sent, "dw_final_write_v1")) == 1
    assert journal("lost") == []
    after = WorkflowInstance.objects.get(pk="lost")
    assert (after.status, after.lease_token, after.output) == (
        before.status,
        before.lease_token,
        None,
    )


def test_inside_the_callers_transaction_the_call_is_alone(two_steps: Any, sent: list[str]) -> None:
    """No START TRANSACTION or COMMIT of its own, and the CALL's results all read: the next
    statement on the connection runs."""
    token = leased(two_steps, "inside")
    write = store.InstanceWrite(
        now=clock.now(),
        entries={"a": step("completed")},
        changes={"status": Status.FAILED, "output": None, "error": {"message": "no"}},
        release=store.Release(None, [], 0, had_waits=False),
    )
    sent.clear()  # the claim's

    with transaction.atomic():
        assert store.write("default", "inside", token, write) is not None
        assert WorkflowInstance.objects.get(pk="inside").status == Status.FAILED

    assert [sql for sql in sent if "START TRANSACTION" in sql] == []
    assert len(calls(sent, "dw_final_write_v1")) == 1
    row = WorkflowInstance.objects.get(pk="inside")
    assert (row.status, row.error, row.lease_token) == (Status.FAILED, {"message": "no"}, None)
    assert journal("inside") == [("a", "completed")]


def test_without_the_procedures_the_statements_are_sent(two_steps: Any, sent: list[str]) -> None:
    files = import_module("django_workflows.migrations.0002_routines").ROUTINES
    with connection.schema_editor() as editor:
        routines.drop(editor, files)
    try:
        entries = run(two_steps, "without")
    finally:
        with connection.schema_editor() as editor:
            routines.create(editor, files)

    assert not calls(sent, "dw_journal_write_v1") + calls(sent, "dw_final_write_v1")
    assert entries == [("a", "completed"), ("b", "completed")]
    assert has_procedures()


def test_migrating_back_drops_them() -> None:
    call_command("migrate", "django_workflows", "0001", verbosity=0)
    try:
        dropped = not has_procedures()
    finally:
        call_command("migrate", "django_workflows", verbosity=0)

    assert dropped
    assert has_procedures()
