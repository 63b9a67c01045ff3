"""The lease holder's write (store.instances.write): all or nothing, only while the token is the
lease token, the guarded entries only while no cancel or terminate is requested, and the flags
it found returned (the store contract's lease holder's write)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import DatabaseError, connection, transaction

from django_workflows import clock
from django_workflows.models import WorkflowInstance
from django_workflows.store import instances as store
from django_workflows.store import payloads

pytestmark = pytest.mark.django_db(transaction=True)

STEP_DONE = {"kind": "step", "status": "completed", "result": 1}
STEP_STARTED = {"kind": "step", "status": "started", "attempt": 2}


def leased(id: str = "w-1", token: str = "t-1") -> WorkflowInstance:
    now = clock.now()
    return WorkflowInstance.objects.create(
        id=id,
        workflow="any",
        version=1,
        status="running",
        lease_token=token,
        lease_owner="a worker",
        lease_until=now + timedelta(minutes=5),
        wake_at=now,
        created_at=now,
        updated_at=now,
    )


def journal(id: str = "w-1") -> dict:
    return dict(store.load_journal("default", id))


def request_cancel(id: str = "w-1", *, terminate: bool = False) -> None:
    assert store.request_cancel("default", id, reason="no", now=clock.now(), terminate=terminate)


def test_a_write_without_the_lease_writes_nothing_and_returns_none():
    leased()
    now = clock.now()
    write = store.InstanceWrite(
        now=now,
        entries={"charge": STEP_DONE},
        guarded_entries={"ship": STEP_STARTED},
        changes={"status": "completed", "output": 1},
        release=store.Release(None, [], 0, had_waits=False),
    )
    assert store.write("default", "w-1", "another-token", write) is None
    row = WorkflowInstance.objects.get(pk="w-1")
    assert (row.status, row.output, row.lease_token) == ("running", None, "t-1")
    assert journal() == {}


def test_a_write_with_the_lease_writes_every_entry_and_change_and_returns_the_flags():
    leased()
    now = clock.now()
    write = store.InstanceWrite(
        now=now,
        entries={"charge": STEP_DONE},
        guarded_entries={"ship": STEP_STARTED},
        changes={"custom_status": {"stage": 2}},
        lease_until=now + timedelta(minutes=10),
    )
    flags = store.write("default", "w-1", "t-1", write)
    assert flags == store.LeaseFlags(False, False, None)
    assert journal() == {"charge": STEP_DONE, "ship": STEP_STARTED}
    row = WorkflowInstance.objects.get(pk="w-1")
    payloads.decode_instance(row)  # CODEC=1 stores it sealed
    assert row.custom_status == {"stage": 2}
    assert row.lease_until == now + timedelta(minutes=10)
    assert row.lease_token == "t-1"


@pytest.mark.parametrize("terminate", [False, True])
def test_the_guarded_entries_are_left_out_once_a_cancel_or_terminate_is_requested(terminate):
    leased()
    request_cancel(terminate=terminate)
    write = store.InstanceWrite(
        now=clock.now(), entries={"charge": STEP_DONE}, guarded_entries={"ship": STEP_STARTED}
    )
    flags = store.write("default", "w-1", "t-1", write)
    assert flags == store.LeaseFlags(True, terminate, "no")
    assert journal() == {"charge": STEP_DONE}


@pytest.mark.parametrize("cancelled", [False, True])
def test_a_name_in_both_gets_the_guarded_document_unless_a_cancel_is_requested(cancelled):
    leased()
    if cancelled:
        request_cancel()
    failed = {"kind": "step", "status": "failed", "attempt": 1}
    write = store.InstanceWrite(
        now=clock.now(), entries={"charge": failed}, guarded_entries={"charge": STEP_STARTED}
    )
    store.write("default", "w-1", "t-1", write)
    assert journal() == {"charge": failed if cancelled else STEP_STARTED}


def test_an_entry_written_again_replaces_its_document():
    leased()
    started = store.InstanceWrite(now=clock.now(), guarded_entries={"charge": STEP_STARTED})
    store.write("default", "w-1", "t-1", started)
    done = store.InstanceWrite(now=clock.now(), entries={"charge": STEP_DONE})
    store.write("default", "w-1", "t-1", done)
    assert journal() == {"charge": STEP_DONE}


@pytest.mark.parametrize("cancelled", [False, True])
def test_a_suspension_keeps_its_wake_time_unless_a_cancel_makes_it_due_at_once(cancelled):
    leased()
    if cancelled:
        request_cancel()
    now = clock.now()
    later = now + timedelta(hours=1)
    write = store.InstanceWrite(
        now=now,
        entries={"sleep": {"kind": "sleep", "until": later.isoformat()}},
        changes={"status": "suspended"},
        release=store.Release(later, [], 0, had_waits=False),
    )
    assert store.write("default", "w-1", "t-1", write) is not None
    row = WorkflowInstance.objects.get(pk="w-1")
    assert (row.status, row.lease_token, row.lease_until) == ("suspended", None, None)
    assert row.wake_at == (now if cancelled else later)
    # Released: the same token writes nothing more.
    assert store.write("default", "w-1", "t-1", store.InstanceWrite(now=now)) is None


def failing_write() -> store.InstanceWrite:
    """A write whose instance update fails in the database (a status longer than its column),
    after its journal entry."""
    return store.InstanceWrite(
        now=clock.now(), entries={"charge": STEP_DONE}, changes={"status": "x" * 100}
    )


@pytest.fixture
def strict():
    if connection.vendor == "sqlite":
        pytest.skip("SQLite: a column takes a longer string than its length")


def test_a_statement_failing_in_the_write_takes_its_other_statements_back(strict):
    leased()
    with pytest.raises(DatabaseError):
        store.write("default", "w-1", "t-1", failing_write())
    assert journal() == {}
    # The connection goes on: the next write is written whole.
    write = store.InstanceWrite(now=clock.now(), entries={"charge": STEP_DONE})
    assert store.write("default", "w-1", "t-1", write) is not None
    assert journal() == {"charge": STEP_DONE}


def test_a_statement_failing_in_a_write_inside_a_transaction_fails_that_transaction(strict):
    leased()
    with pytest.raises(DatabaseError), transaction.atomic():
        WorkflowInstance.objects.filter(pk="w-1").update(priority=7)
        store.write("default", "w-1", "t-1", failing_write())
    assert journal() == {}
    assert WorkflowInstance.objects.get(pk="w-1").priority == 0


def test_a_write_inside_a_transaction_is_rolled_back_with_it():
    leased()
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        write = store.InstanceWrite(now=clock.now(), entries={"charge": STEP_DONE})
        assert store.write("default", "w-1", "t-1", write) is not None
        1 / 0  # noqa: B018
    assert journal() == {}


@pytest.fixture
def one_statement_a_round_trip():
    """MariaDB/MySQL: the connection opened without multi-statements (mysqlclient's
    `multi_statements` option off, as PyMySQL opens one)."""
    if connection.vendor != "mysql":
        pytest.skip("MySQL and MariaDB: the only databases that batch the write's statements")
    options = connection.settings_dict["OPTIONS"]
    connection.close()
    options["multi_statements"] = False
    yield
    connection.close()
    del options["multi_statements"]


def test_a_connection_without_multi_statements_writes_the_same(one_statement_a_round_trip):
    leased()
    request_cancel()
    write = store.InstanceWrite(
        now=clock.now(), entries={"charge": STEP_DONE}, guarded_entries={"ship": STEP_STARTED}
    )
    assert store.write("default", "w-1", "t-1", write) == store.LeaseFlags(True, False, "no")
    assert store.write("default", "w-1", "another-token", write) is None
    assert journal() == {"charge": STEP_DONE}
    with pytest.raises(DatabaseError):
        store.write("default", "w-1", "t-1", failing_write())
    assert journal() == {"charge": STEP_DONE}
