"""A started instance's row: the one-statement start outside a transaction (on PostgreSQL sent
through libpq with its parameters as text) stores what a start in a transaction stores, and
new_row() makes the model's own row with its defaults."""

from __future__ import annotations

import pytest
from django.db import transaction

import django_workflows as wf
from django_workflows.engine import starts
from django_workflows.models import WorkflowInstance

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_start_outside_a_transaction_stores_the_row_a_start_inside_one_does():
    """Each kind of value (text with quotes, percent signs and non-ASCII characters, JSON,
    integers, booleans, times) as a start in a transaction stores it."""
    input = {"note": 'it\'s 100% "quoted" \\ and \u00e9t\u00e9 \U0001f4e6', "n": [1, 2.5, None]}
    options = {"timeout": "1h", "priority": 7, "queue": "q-1"}
    wf.start("values", input, id="row-alone", **options)
    with transaction.atomic():
        wf.start("values", input, id="row-in-a-transaction", **options)
    rows = {row.pop("id"): row for row in WorkflowInstance.objects.values()}
    alone, in_a_transaction = rows["row-alone"], rows["row-in-a-transaction"]
    # The times differ by when each started; the input as stored differs under a payload
    # codec (each encryption has its own nonce), so it is compared as read back.
    differ = ("wake_at", "deadline", "created_at", "updated_at", "input")
    assert wf.get_status("row-alone").input == wf.get_status("row-in-a-transaction").input
    assert wf.get_status("row-alone").input == input and alone["priority"] == 7
    assert (
        alone["deadline"] - alone["created_at"]
        == in_a_transaction["deadline"] - in_a_transaction["created_at"]
    )
    assert {k: v for k, v in alone.items() if k not in differ} == {
        k: v for k, v in in_a_transaction.items() if k not in differ
    }


def test_a_new_row_is_the_models_own_with_its_defaults():
    """new_row() takes the fields in order, with their defaults taken once: no default may be
    a callable (a new list or dict each time), and a wrong name is refused as the model does."""
    fields = WorkflowInstance._meta.concrete_fields
    assert not [f.name for f in fields if f.has_default() and callable(f.default)]
    values = {"id": "a-row", "workflow": "values", "version": 2, "subject_type_id": None}
    row, model = starts.new_row(**values), WorkflowInstance(**values)
    assert [getattr(row, f.attname) for f in fields] == [getattr(model, f.attname) for f in fields]
    assert row._state.adding and row._state.db is None
    with pytest.raises(TypeError, match="no field subject_type"):
        starts.new_row(id="a-row", subject_type=None)
