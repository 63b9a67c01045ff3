"""A subject that is not a saved model instance: a clear error naming it, before anything is
written, and the caller's transaction still usable (PostgreSQL aborts one after a failed
statement: the checks run before any SQL)."""

from __future__ import annotations

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import transaction

import django_workflows as wf
from django_workflows.models import WorkflowInstance
from tests.testapp.models import Ledger, Order

pytestmark = pytest.mark.django_db

NOT_SUBJECTS = [
    pytest.param(lambda: Order(id="never-saved"), ValueError, "never saved", id="unsaved"),
    pytest.param(lambda: Ledger(order_id="x", total=1), ValueError, "no primary key", id="no-pk"),
    pytest.param(lambda: Order, TypeError, "not the class Order", id="a-model-class"),
    pytest.param(lambda: {"id": "3f9a1c"}, TypeError, "not dict", id="a-dict"),
    pytest.param(lambda: "testapp.order:3f9a1c", TypeError, "not str", id="a-label"),
    pytest.param(lambda: 42, TypeError, "not int", id="a-number"),
]


@pytest.mark.parametrize(("subject", "error", "message"), NOT_SUBJECTS)
def test_start_refuses_what_is_not_a_saved_model_instance(
    review, workflow_clock, subject, error, message
):
    with pytest.raises(error, match=f"subject must be a saved model instance.*{message}"):
        wf.start(review, {"id": "x"}, id="refused", subject=subject())

    assert not WorkflowInstance.objects.exists()


@pytest.mark.parametrize(("subject", "error", "message"), NOT_SUBJECTS)
def test_the_lookups_refuse_what_is_not_a_saved_model_instance(
    review, workflow_clock, subject, error, message
):
    with pytest.raises(error, match="subject must be a saved model instance"):
        wf.list_instances(subject=subject())
    with pytest.raises(error, match="subject must be a saved model instance"):
        WorkflowInstance.objects.for_subject(subject())


def test_a_row_deleted_before_the_start_is_refused_as_unsaved_too(review, workflow_clock):
    """Django gives a deleted row's object a primary key of None."""
    order = Order.objects.create(id="gone")
    order.delete()
    ledger = Ledger.objects.create(order_id="gone", total=1)
    ledger.delete()

    with pytest.raises(ValueError, match="Ledger has no primary key"):
        wf.start(review, {"id": "x"}, id="refused", subject=ledger)
    assert not WorkflowInstance.objects.exists()


def test_a_primary_key_longer_than_the_subject_column_is_refused(review, workflow_clock):
    order = Order.objects.create(id="k" * 256)

    with pytest.raises(ValueError, match="subject's primary key is 256 characters long"):
        wf.start(review, {"id": "x"}, id="refused", subject=order)
    assert not WorkflowInstance.objects.exists()


@pytest.mark.parametrize(("subject", "error", "message"), NOT_SUBJECTS)
def test_the_callers_transaction_stays_usable_after_a_refused_subject(
    review, workflow_clock, subject, error, message
):
    ContentType.objects.clear_cache()  # the content type lookup of the next start may query
    with transaction.atomic():
        with pytest.raises(error):
            wf.start(review, {"id": "x"}, id="refused", subject=subject())
        order = Order.objects.create(id="after")
        started = wf.start(review, {"id": "after"}, id="after", subject=order)
    assert started.created
    assert list(WorkflowInstance.objects.values_list("id", flat=True)) == ["after"]
    assert wf.get_status("after").subject == "testapp.order:after"


def test_a_too_long_key_leaves_the_callers_transaction_usable(review, workflow_clock):
    with transaction.atomic():
        order = Order.objects.create(id="k" * 256)
        with pytest.raises(ValueError, match="subject's primary key"):
            wf.start(review, {"id": "x"}, id="refused", subject=order)
        assert Order.objects.filter(pk=order.pk).exists()
        assert wf.start(review, {"id": "x"}, id="fine").created
    assert list(WorkflowInstance.objects.values_list("id", flat=True)) == ["fine"]
