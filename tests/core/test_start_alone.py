"""A start outside any transaction, with nothing written beside its row: one statement on
PostgreSQL (its INSERT reads the newest signal's id and notifies the other processes), the
INSERT and the wake-up count elsewhere; the same results as a start in a transaction."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

import django_workflows as wf
from django_workflows.models import Signal, WorkflowInstance
from tests.core.helpers import order
from tests.testapp.workflows import fulfil_order

pytestmark = pytest.mark.django_db(transaction=True)


def statements(call) -> list[str]:
    """The statements `call` sent, each by its first words."""
    with CaptureQueriesContext(connection) as captured:
        call()
    sent = [" ".join(query["sql"].split()[:2]) for query in captured.captured_queries]
    return [sql for sql in sent if sql != "SELECT @@max_allowed_packet"]  # once a connection


def test_a_start_outside_a_transaction_is_one_round_trip_on_postgresql():
    wf.start(fulfil_order, order(), id="order-first")  # the wake-up counter's row, and such
    sent = statements(lambda: wf.start(fulfil_order, order(), id="order-alone"))
    # SQLite under Django 4.2: the store takes the write lock itself before it reads.
    sent = [sql for sql in sent if sql != "UPDATE django_workflows_storelock"]
    expected = {
        "postgresql": ["WITH started"],  # the INSERT and its pg_notify()
        "mysql": ["INSERT IGNORE", "UPDATE `django_workflows_wakeupcounter`"],
        "sqlite": [
            "BEGIN IMMEDIATE" if "IMMEDIATE" in sent[0] else "BEGIN",
            "INSERT OR",
            'UPDATE "django_workflows_wakeupcounter"',
            "COMMIT",
        ],
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
