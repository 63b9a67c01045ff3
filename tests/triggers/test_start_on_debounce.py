"""start_on with a debounce: a storm of saves of one object starts one instance, with the last
save's input, once the saves have stopped for the debounce."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.db.models.signals import post_save

import django_workflows as wf
from django_workflows import start_on
from django_workflows.models import WorkflowInstance
from tests.testapp.models import Purchase

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def reindex(define):
    @start_on(
        post_save,
        sender=Purchase,
        id=lambda instance, **kwargs: f"reindex-{instance.reference}",
        input=lambda instance, **kwargs: {"total": instance.total},
        debounce="5s",
        debounce_timeout="1m",
    )
    @define("reindex-purchase")
    def flow(ctx, input):
        return input["total"]

    return flow


def test_a_storm_of_saves_starts_one_instance_with_the_last_input(reindex, workflow_clock):
    purchase = Purchase.objects.create(reference="p1", total=1)
    for total in range(2, 51):
        workflow_clock.advance("100ms")
        purchase.total = total
        with transaction.atomic():
            purchase.save()
    assert WorkflowInstance.objects.count() == 1
    instance = WorkflowInstance.objects.get()
    assert instance.wake_at == workflow_clock.now() + timedelta(seconds=5)
    assert wf.drain() == 0
    workflow_clock.advance("5s")
    wf.drain()
    assert wf.result("reindex-p1") == 50


def test_start_on_refuses_a_bad_debounce(define):
    with pytest.raises(ValueError, match="debounce"):
        start_on(post_save, sender=Purchase, id="x", input=None, debounce="soon")
    with pytest.raises(TypeError, match="debounce"):
        start_on(post_save, sender=Purchase, id="x", input=None, debounce=[5])
