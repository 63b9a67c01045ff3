"""start_on: a Django signal starts a workflow in the transaction the signal is sent in."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import Signal

import django_workflows as wf
from django_workflows import start_on
from django_workflows.models import WorkflowInstance
from tests.testapp.models import Purchase

pytestmark = pytest.mark.django_db(transaction=True)


def purchase_id(instance, **kwargs):
    return f"purchase-{instance.reference}"


def purchase_input(instance, **kwargs):
    return {"reference": instance.reference, "total": instance.total}


@pytest.fixture
def purchase_flow(define):
    @start_on(post_save, sender=Purchase, id=purchase_id, input=purchase_input)
    @define("purchase-flow")
    def flow(ctx, input):
        return input["total"]

    return flow


def test_a_save_starts_an_instance_with_the_derived_id_and_input(purchase_flow):
    Purchase.objects.create(reference="p1", total=12)

    status = wf.get_status("purchase-p1")
    assert status is not None
    assert (status.workflow, status.version, status.input) == (
        "purchase-flow",
        1,
        {"reference": "p1", "total": 12},
    )
    wf.drain()
    assert wf.result("purchase-p1") == 12


def test_a_save_in_an_atomic_block_that_rolls_back_leaves_no_instance(purchase_flow):
    with pytest.raises(RuntimeError), transaction.atomic():
        Purchase.objects.create(reference="p1", total=12)
        assert wf.get_status("purchase-p1") is not None  # inside, the instance is there
        raise RuntimeError("the business transaction fails")

    assert not Purchase.objects.exists()
    assert not WorkflowInstance.objects.exists()


def test_a_second_save_finds_the_first_instance(purchase_flow):
    purchase = Purchase.objects.create(reference="p1", total=12)
    results = post_save.send(Purchase, instance=purchase, created=False)
    purchase.save()

    assert WorkflowInstance.objects.count() == 1
    [(_, [found])] = results
    assert (found.id, found.created) == ("purchase-p1", False)


def test_a_save_with_another_input_raises_the_conflict_and_rolls_back(purchase_flow):
    purchase = Purchase.objects.create(reference="p1", total=12)
    purchase.total = 13
    with pytest.raises(wf.WorkflowIdConflictError), transaction.atomic():
        purchase.save()

    assert Purchase.objects.get().total == 12
    assert wf.get_status("purchase-p1").input["total"] == 12


def test_when_false_starts_nothing(define):
    @start_on(
        post_save,
        sender=Purchase,
        id=purchase_id,
        input=purchase_input,
        when=lambda created, instance, **kw: created and instance.express,
    )
    @define("express-flow")
    def flow(ctx, input):
        return None

    purchase = Purchase.objects.create(reference="standard")
    purchase.express = True
    purchase.save()  # express now, but not created: nothing either
    assert not WorkflowInstance.objects.exists()

    Purchase.objects.create(reference="fast", express=True)
    assert list(WorkflowInstance.objects.values_list("id", flat=True)) == ["purchase-fast"]


def test_values_and_functions_of_only_the_arguments_they_name(define):
    placed = Signal()

    @start_on(
        placed,
        id=lambda number: f"n-{number}",
        input={"fixed": True},
        priority=lambda big: 1 if big else 5,
    )
    @define("named-args")
    def flow(ctx, input):
        return None

    [(_, [started])] = placed.send(sender=None, number=7, big=True)
    assert started.created
    status = wf.get_status("n-7")  # decoded, also with a codec
    assert (status.input, status.priority) == ({"fixed": True}, 1)


def test_the_decorator_works_below_workflow_too(define):
    @define("below")
    @start_on(post_save, sender=Purchase, id=purchase_id, input=purchase_input)
    def flow(ctx, input):
        return None

    Purchase.objects.create(reference="p2", total=1)
    assert wf.get_status("purchase-p2").workflow == "below"


def test_a_sender_given_by_label_and_a_signal_without_sender(define):
    pinged = Signal()

    @start_on(post_save, sender="testapp.Purchase", id=purchase_id, input=purchase_input)
    @start_on(pinged, id=lambda sender, **kw: f"ping-{sender}", input=None)
    @define("labels")
    def flow(ctx, input):
        return None

    Purchase.objects.create(reference="p3")
    pinged.send(sender="a")
    pinged.send(sender="b")
    assert sorted(WorkflowInstance.objects.values_list("id", flat=True)) == [
        "ping-a",
        "ping-b",
        "purchase-p3",
    ]


def test_the_highest_version_decides_what_starts(define):
    started = Signal()

    @start_on(started, id=lambda n, **kw: f"v-{n}", input=lambda n, **kw: {"n": n})
    @define("trigger-versioned", version=1)
    def one(ctx, input):
        return 1

    @define("trigger-versioned", version=2)
    def two(ctx, input):
        return 2

    started.send(sender=None, n=1)
    assert not WorkflowInstance.objects.exists()  # version 2 maps nothing

    @start_on(started, id=lambda n, **kw: f"v3-{n}", input=lambda n, **kw: {"n": n})
    @define("trigger-versioned", version=3)
    def three(ctx, input):
        return 3

    started.send(sender=None, n=1)
    assert list(WorkflowInstance.objects.values_list("id", "version")) == [("v3-1", 3)]


def test_connecting_again_connects_nothing_twice(purchase_flow):
    from django_workflows.triggers import connect_receivers

    before = len(post_save.receivers)
    connect_receivers()
    connect_receivers()
    assert len(post_save.receivers) == before
    [(_, results)] = [
        (receiver, response)
        for receiver, response in post_save.send(
            Purchase, instance=Purchase(reference="x"), created=True
        )
        if response
    ]
    assert len(results) == 1


def test_a_second_ready_connects_nothing_twice(purchase_flow):
    from django.apps import apps

    before = len(post_save.receivers)
    apps.get_app_config("django_workflows").ready()
    assert len(post_save.receivers) == before
    Purchase.objects.create(reference="p5")
    assert WorkflowInstance.objects.count() == 1


def test_a_class_workflow_with_start_on_below_workflow(define):
    @define("trigger-class")
    @start_on(post_save, sender=Purchase, id=purchase_id, input=purchase_input)
    class Flow:
        def run(self, ctx, input):
            return input["reference"]

    Purchase.objects.create(reference="p6")
    wf.drain()
    assert wf.result("purchase-p6") == "p6"
