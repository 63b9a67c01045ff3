"""An atomic step whose function leaves its transaction unusable: set_rollback(True), or a
database error caught without a savepoint. Its attempt fails as any step error does (the retry
policy decides), its writes roll back, and the instance is not handed back for ever."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

import django_workflows as wf
from tests.procapp.models import Charge, StepRun

pytestmark = pytest.mark.django_db(transaction=True)

UNUSABLE = "left its transaction unusable"
LOOPED = 6  # runs of the function after which it stops the loop the engine used to make


def counted(instance_id: str, runs: list, body):
    """The step's function: a row of its own, then `body`; it raises once it ran LOOPED times,
    so that an engine that hands the instance back for ever ends instead of hanging the test."""

    def run(step):
        runs.append(step.attempt)
        if len(runs) > LOOPED:
            raise RuntimeError("ran too many times")
        StepRun.objects.create(instance_id=instance_id, step="book", pid=step.attempt, started=0)
        body(instance_id)
        return "booked"

    return run


def set_rollback(instance_id: str) -> None:
    transaction.set_rollback(True)


def duplicate_caught_orm(instance_id: str) -> None:
    try:
        Charge.objects.create(key=f"{instance_id}:dup", order_id=instance_id)
    except IntegrityError:
        pass  # the mistake: no savepoint around the statement that may fail


def duplicate_caught_sql(instance_id: str) -> None:
    qn = connection.ops.quote_name
    sql = (
        f"INSERT INTO {qn(Charge._meta.db_table)} ({qn('key')}, {qn('order_id')}, "
        f"{qn('requests')}) VALUES (%s, %s, 1)"
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql, [f"{instance_id}:dup", instance_id])
    except IntegrityError:
        pass


def duplicate_in_savepoint(instance_id: str) -> None:
    try:
        with transaction.atomic():
            Charge.objects.create(key=f"{instance_id}:dup", order_id=instance_id)
    except IntegrityError:
        pass  # the savepoint rolled back; the step's transaction goes on


def start(define, name: str, instance_id: str, body, runs: list, retry=None) -> None:
    @define(name)
    def booked(ctx, input):
        return ctx.step(
            "book",
            counted(ctx.instance_id, runs, body),
            atomic=True,
            retry=retry or {"attempts": 1},
        )

    Charge.objects.create(key=f"{instance_id}:dup", order_id="someone-else")
    wf.start(name, None, id=instance_id)


def drain_all(times: int = 1) -> None:
    for _ in range(times):
        wf.drain()


@pytest.mark.parametrize(
    "body", [set_rollback, duplicate_caught_orm], ids=["set_rollback", "integrity-error-orm"]
)
def test_a_step_that_marks_its_transaction_for_rollback_fails_once(define, body):
    """Django marks the transaction for rollback on set_rollback(True) and on an ORM error
    inside atomic(): on every database, the next query would raise TransactionManagementError."""
    runs: list = []
    start(define, "broken-once", "br-1", body, runs)
    drain_all()
    status = wf.get_status("br-1")
    assert status.status == "failed", status
    assert status.error["name"] == "StepFailedError"
    assert UNUSABLE in status.error["message"]
    assert "transaction.atomic()" in status.error["message"]
    assert runs == [1]
    assert not StepRun.objects.filter(instance_id="br-1").exists()  # rolled back
    assert list(Charge.objects.values_list("order_id", flat=True)) == ["someone-else"]


def test_a_database_error_caught_in_raw_sql_breaks_the_transaction_only_on_postgresql(define):
    """Without the ORM, Django marks nothing: PostgreSQL aborts the transaction itself; MariaDB
    and SQLite roll back only the statement, and the step's transaction goes on."""
    runs: list = []
    start(define, "broken-sql", "br-sql", duplicate_caught_sql, runs)
    drain_all()
    status = wf.get_status("br-sql")
    assert runs == [1]
    if connection.vendor == "postgresql":
        assert status.status == "failed", status
        assert UNUSABLE in status.error["message"]
        assert not StepRun.objects.filter(instance_id="br-sql").exists()
    else:
        assert status.status == "completed", status.error
        assert StepRun.objects.filter(instance_id="br-sql").count() == 1


def test_the_retry_policy_decides_for_a_step_that_breaks_its_transaction(define):
    runs: list = []
    start(
        define,
        "broken-retried",
        "br-retry",
        set_rollback,
        runs,
        retry={"attempts": 3, "delay": "0s"},
    )
    drain_all(times=5)
    status = wf.get_status("br-retry", journal=True)
    assert status.status == "failed", status
    assert UNUSABLE in status.error["message"]
    assert runs == [1, 2, 3]
    assert next(e for e in status.journal if e.name == "book").attempt == 3
    assert not StepRun.objects.filter(instance_id="br-retry").exists()


def test_a_step_that_catches_its_error_in_a_savepoint_completes(define):
    runs: list = []
    start(define, "recovered", "br-ok", duplicate_in_savepoint, runs)
    drain_all()
    status = wf.get_status("br-ok")
    assert status.status == "completed", status.error
    assert status.output == "booked"
    assert runs == [1]
    assert StepRun.objects.filter(instance_id="br-ok").count() == 1
