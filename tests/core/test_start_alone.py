"""A start outside any transaction, with nothing written beside its row: one statement on
PostgreSQL (its INSERT reads the newest signal's id and notifies the other processes), the
INSERT and the wake-up count on MariaDB (one round trip), the INSERT alone on SQLite (its rowid
wakes the workers); the same results as a start in a transaction. A signal outside any
transaction is one call of the database's own routine on PostgreSQL and MariaDB."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext

import django_workflows as wf
from django_workflows.models import Signal, WakeupCounter, WorkflowInstance
from django_workflows.store.backends import backend
from tests.core.helpers import order
from tests.testapp.workflows import fulfil_order

pytestmark = pytest.mark.django_db(transaction=True)


def statements(call) -> list[str]:
    """The statements `call` sent, each by its first words (up to a parenthesis)."""
    with CaptureQueriesContext(connection) as captured:
        call()
    sent = [" ".join(query["sql"].split("(")[0].split()[:2]) for query in captured.captured_queries]
    return [sql for sql in sent if sql != "SELECT @@max_allowed_packet"]  # once a connection


def test_a_start_outside_a_transaction_is_one_round_trip_on_postgresql():
    wf.start(fulfil_order, order(), id="order-first")  # the wake-up counter's row, and such
    sent = statements(lambda: wf.start(fulfil_order, order(), id="order-alone"))
    # SQLite under Django 4.2: the store takes the write lock itself before it reads.
    sent = [sql for sql in sent if sql != "UPDATE django_workflows_storelock"]
    expected = {
        "postgresql": ["SELECT dw_start_v1"],  # the INSERT and its pg_notify()
        "mysql": ["INSERT IGNORE", "UPDATE `django_workflows_wakeupcounter`"],
        "sqlite": ["INSERT OR"],  # no wake-up count: its rowid wakes the workers
    }[connection.vendor]
    assert sent[: len(expected)] == expected and len(sent) == len(expected), sent
    assert WorkflowInstance.objects.get(pk="order-alone").status == "pending"


def test_a_start_with_tags_writes_them_outside_a_transaction_too():
    wf.start(fulfil_order, order(), id="order-tagged", tags=["express"])
    assert wf.get_status("order-tagged").tags == ["express"]


def test_its_signal_cursor_is_the_newest_signals_id_as_in_a_transaction():
    assert wf.start("values", None, id="before-any-signal").created
    wf.signal("ping", {"n": 1}, key="k")
    wf.signal("ping", {"n": 2}, key="k")
    newest = Signal.objects.order_by("-id").values_list("id", flat=True)[0]
    wf.start("values", None, id="alone")
    with transaction.atomic():
        wf.start("values", None, id="in-a-transaction")
    cursors = dict(WorkflowInstance.objects.values_list("id", "signal_cursor"))
    assert cursors == {"before-any-signal": 0, "alone": newest, "in-a-transaction": newest}


def test_a_signal_sent_before_the_start_is_not_taken():
    wf.signal("ping", {"n": "before"}, key="k")
    wf.start("wait-once", {"signal": "ping", "key": "k"}, id="waiter")
    wf.drain()
    assert wf.get_status("waiter").status == "suspended"
    wf.signal("ping", {"n": "after"}, key="k")
    wf.drain()
    status = wf.get_status("waiter")
    assert (status.status, status.output) == ("completed", {"n": "after"})


def test_the_same_id_and_input_outside_a_transaction_returns_the_existing_instance():
    first = wf.start(fulfil_order, order(), id="order-twice")
    again = wf.start(fulfil_order, order(), id="order-twice")
    assert (first.created, again.created) == (True, False)
    assert again == wf.StartResult("order-twice", "order-fulfilment", 1, False, "pending")
    with pytest.raises(wf.WorkflowIdConflictError):
        wf.start(fulfil_order, order(user_id="u_other"), id="order-twice")
    assert WorkflowInstance.objects.filter(pk="order-twice").count() == 1


def test_a_start_outside_a_transaction_is_one_round_trip_on_mariadb():
    """The INSERT and the wake-up count go to the server together: one call of mysqlclient's
    query(), as the lease holder's writes do (store/backends/mysql/batches.py)."""
    if connection.vendor != "mysql":
        pytest.skip("MySQL and MariaDB: PostgreSQL's is one statement, SQLite has no round trips")
    wf.start(fulfil_order, order(), id="order-first")  # the wake-up counter's row
    driver = connection.connection
    sent: list[bytes] = []

    def query(sql: bytes) -> None:
        sent.append(sql)
        type(driver).query(driver, sql)

    driver.query = query
    try:
        marks = wakeup_counts()
        assert wf.start(fulfil_order, order(), id="order-batched").created
        started = wakeup_counts()
        assert not wf.start(fulfil_order, order(), id="order-batched").created
        again = wakeup_counts()
    finally:
        connection.close()  # the next connection's driver counts nothing
    starts = [sql for sql in sent if b"INSERT" in sql]
    assert len(starts) == 2 and all(b"wakeupcounter" in sql for sql in starts), sent
    assert (started - marks, again - started) == (1, 0)  # counted only when it inserted
    assert WorkflowInstance.objects.get(pk="order-batched").status == "pending"


def test_the_first_start_counts_its_wake_up_in_a_new_counter_row():
    if connection.vendor != "mysql":
        pytest.skip("PostgreSQL notifies; on SQLite the new row's rowid is the wake-up")
    WakeupCounter.objects.all().delete()
    assert wf.start(fulfil_order, order(), id="order-counted").created
    assert wakeup_counts() == 1


def wakeup_counts() -> int:
    return sum(WakeupCounter.objects.values_list("count", flat=True))


def test_a_start_moves_sqlites_wake_up_mark_for_other_connections_and_counts_nothing():
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's wake-up mark")
    database = backend(connection.alias)
    wf.start(fulfil_order, order(), id="order-first")
    marks: list[object] = []

    def look() -> None:  # another connection, as a worker's watcher has
        try:
            marks.append(database.wakeup_mark())
        finally:
            connections[connection.alias].close()

    def look_on_a_thread() -> None:
        thread = threading.Thread(target=look)
        thread.start()
        thread.join(10)

    counted = wakeup_counts()
    look_on_a_thread()
    assert wf.start(fulfil_order, order(), id="order-marked").created
    look_on_a_thread()
    wf.start(fulfil_order, order(), id="order-marked")  # the same instance: no new row
    look_on_a_thread()
    assert marks[0] != marks[1] == marks[2]
    assert wakeup_counts() == counted


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's signal function")
def test_a_signal_outside_a_transaction_is_one_round_trip_on_postgresql():
    wf.signal("ping", None, key="first")  # the probe of the function, once a process
    sent = statements(lambda: wf.signal("ping", None, key="alone"))
    assert sent == ["SELECT *"], sent  # dw_signal_v1: the lock, INSERT, wake-up, pg_notify()
    assert Signal.objects.filter(key="alone").exists()


@pytest.mark.skipif(connection.vendor != "mysql", reason="MySQL's and MariaDB's procedure")
def test_a_signal_outside_a_transaction_is_one_round_trip_on_mariadb():
    wf.signal("ping", None, key="first")  # the probe of the procedure, once a process
    sent = statements(lambda: wf.signal("ping", None, key="alone"))
    assert sent == ["CALL dw_signal_v1"], sent  # the lock, INSERT, wake-up, COMMIT, count
    assert Signal.objects.filter(key="alone").exists()
