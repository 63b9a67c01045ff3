"""A signal outside a transaction through the database's own routine, `dw_signal_v1`:
PostgreSQL's function (migration 0004_signal_routine) and MySQL's and MariaDB's procedure
(0005_mysql_signal_routine). Under the signal lock it returns the earlier signal of the same
dedupe id, or it inserts the signal, wakes the instances waiting for it and wakes the workers of
other processes (a NOTIFY, a wake-up count). With a payload a codec seals, or without the
routine, signal() runs in a transaction as before; migrating back drops it.

What only one database has is tested beside it: test_signal_function.py (PostgreSQL) and
test_mysql_signal_procedure.py (MySQL and MariaDB)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from importlib import import_module
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection, connections, transaction

import django_workflows as wf
from django_workflows.models import Signal, WakeupCounter
from django_workflows.store import payloads
from django_workflows.store.backends import routines
from tests.store.functions import notified

pytestmark = [
    pytest.mark.django_db(transaction=True),  # outside a transaction; the routine is dropped
    pytest.mark.skipif(
        connection.vendor not in ("postgresql", "mysql"), reason="SQLite has no routines"
    ),
]

# the call's first words, the migration that makes the routine, the one before it
CALL, MIGRATION, BEFORE = {
    "postgresql": ("SELECT * FROM dw_signal_v1(", "0004_signal_routine", "0003"),
    "mysql": ("CALL dw_signal_v1(", "0005_mysql_signal_routine", "0004"),
}.get(connection.vendor, ("", "0001_initial", "0001"))

FILES = getattr(import_module(f"django_workflows.migrations.{MIGRATION}"), "ROUTINES", ())


def calls(sent: list[str]) -> list[str]:
    return [sql for sql in sent if sql.startswith(CALL)]


def has_routine() -> bool:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT COUNT(*) FROM pg_proc WHERE proname = 'dw_signal_v1'")
        else:
            cursor.execute(
                "SELECT COUNT(*) FROM information_schema.ROUTINES "
                "WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = 'dw_signal_v1'"
            )
        return bool(cursor.fetchone()[0])


@pytest.fixture
def wakeups(request: pytest.FixtureRequest) -> Callable[[], int]:
    """How many wake-ups the workers of other processes were sent since the last call: a
    NOTIFY on PostgreSQL (at most one, waited for up to 2 seconds), the wake-up counts on MySQL
    and MariaDB."""
    if connection.vendor == "postgresql":
        listening = request.getfixturevalue("listening")
        return lambda: notified(listening)
    counted = [sum(WakeupCounter.objects.values_list("count", flat=True))]

    def since() -> int:
        counted.append(sum(WakeupCounter.objects.values_list("count", flat=True)))
        return counted[-1] - counted[-2]

    return since


@pytest.fixture
def waiting(define: Any) -> Any:
    """`waits`: the payload of signal "paid" with the instance's key."""

    @define("waits")
    def waits(ctx: Any, key: str | None) -> Any:
        return ctx.wait_for_signal("paid", "paid", key=key)

    return waits


@pytest.mark.parametrize("key", ["order-1", None])
def test_a_signal_calls_it_wakes_its_waiter_and_the_workers(
    sent: list[str], wakeups: Callable[[], int], waiting: Any, key: str | None
) -> None:
    wf.start("waits", key, id="waiting")
    assert wf.drain() == 1
    assert wakeups() == 1  # the start's

    result = wf.signal("paid", None, key=key)

    assert len(calls(sent)) == 1
    assert (result.created, result.woken, result.key) == (True, 1, key)
    assert wakeups() == 1
    assert Signal.objects.get(pk=result.signal_id).key == key
    assert wf.drain() == 1
    assert wf.get_status("waiting").status == "completed"


def test_a_payload_reaches_the_waiter_whether_a_codec_seals_it_or_not(
    sent: list[str], waiting: Any
) -> None:
    wf.start("waits", "order-2", id="paid-in-full")
    wf.drain()
    payload = {"amount": 42, "note": "été 😀"}

    result = wf.signal("paid", payload, key="order-2")

    sealed = payloads.seals_signal(payload)  # a codec binds it to the row's id
    assert len(calls(sent)) == (0 if sealed else 1)
    assert result.woken == 1
    assert wf.drain() == 1
    assert wf.get_status("paid-in-full").output == payload


def test_the_same_dedupe_id_again_returns_the_first_and_wakes_no_one(
    sent: list[str], wakeups: Callable[[], int]
) -> None:
    first = wf.signal("delivered", None, key="order-3", id="TRK1")
    assert wakeups() == 1

    again = wf.signal("delivered", None, key="order-3", id="TRK1")

    assert len(calls(sent)) == 2
    assert (again.created, again.signal_id, again.woken) == (False, first.signal_id, 0)
    assert wakeups() == 0
    assert Signal.objects.filter(name="delivered").count() == 1


def test_the_same_dedupe_id_with_another_key_is_refused(sent: list[str]) -> None:
    wf.signal("delivered", None, key="order-4", id="TRK2")

    with pytest.raises(wf.WorkflowIdConflictError, match="was sent before with key 'order-4'"):
        wf.signal("delivered", None, key="order-5", id="TRK2")

    assert len(calls(sent)) == 2
    assert Signal.objects.filter(name="delivered").count() == 1


def test_the_same_dedupe_id_from_many_threads_is_stored_once() -> None:
    results: list[Any] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def send() -> None:
        try:
            barrier.wait(10)
            results.append(wf.signal("delivered", None, key="order-5", id="TRK3"))
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=send) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert not errors
    assert sorted(result.created for result in results) == [False] * 7 + [True]
    assert len({result.signal_id for result in results}) == 1
    assert Signal.objects.filter(name="delivered").count() == 1


def test_inside_a_transaction_it_wakes_the_workers_at_the_commit(
    sent: list[str], wakeups: Callable[[], int], waiting: Any
) -> None:
    """PostgreSQL's function joins the caller's transaction; MySQL's and MariaDB's procedure
    commits its own, so there the statements are sent instead."""
    wf.start("waits", "order-6", id="in-a-transaction")
    wf.drain()
    assert wakeups() == 1

    with transaction.atomic():
        result = wf.signal("paid", None, key="order-6")

    assert len(calls(sent)) == (1 if connection.vendor == "postgresql" else 0)
    assert (result.created, result.woken) == (True, 1)
    assert wakeups() == 1
    assert wf.drain() == 1


def test_without_it_a_transaction_records_the_signal(
    sent: list[str], wakeups: Callable[[], int], waiting: Any
) -> None:
    wf.start("waits", "order-7", id="without-routine")
    wf.drain()
    assert wakeups() == 1
    with connection.schema_editor() as editor:
        routines.drop(editor, FILES)
    try:
        result = wf.signal("paid", None, key="order-7")
        woken = wakeups()
    finally:
        with connection.schema_editor() as editor:
            routines.create(editor, FILES)

    assert not calls(sent)
    assert (result.created, result.woken, woken) == (True, 1, 1)
    assert has_routine()
    assert wf.drain() == 1


def test_migrating_back_drops_it() -> None:
    call_command("migrate", "django_workflows", BEFORE, verbosity=0)
    try:
        dropped = not has_routine()
    finally:
        call_command("migrate", "django_workflows", verbosity=0)

    assert dropped
    assert has_routine()
