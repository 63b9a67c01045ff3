"""start_on's subject, tags and attributes: what start() takes, as values or functions of the
signal's keyword arguments, checked before anything is written."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.db.models.signals import post_save

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
def linked_flow(define):
    @start_on(
        post_save,
        sender=Purchase,
        when=lambda created, **kw: created,
        id=purchase_id,
        input=purchase_input,
        subject=lambda instance, **kw: instance,
        tags=lambda instance, **kw: ["express"] if instance.express else [],
        attributes=lambda instance, **kw: {"total": instance.total, "express": instance.express},
    )
    @define("linked-flow", tags=["purchases"])
    def flow(ctx, input):
        return input["total"]

    return flow


def test_a_save_starts_an_instance_about_the_row_with_its_tags_and_attributes(linked_flow):
    express = Purchase.objects.create(reference="p1", total=4200, express=True)
    Purchase.objects.create(reference="p2", total=900)

    status = wf.get_status("purchase-p1")
    assert status.subject == f"testapp.purchase:{express.pk}"
    assert status.tags == ["express", "purchases"]
    assert status.attributes == {"express": True, "total": 4200}
    assert wf.get_status("purchase-p2").tags == ["purchases"]

    assert [s.id for s in wf.list_instances(subject=express)] == ["purchase-p1"]
    assert [s.id for s in WorkflowInstance.objects.for_subject(express)] == ["purchase-p1"]
    assert [s.id for s in wf.list_instances(tag="express")] == ["purchase-p1"]
    big = wf.list_instances(attributes={"total__gte": 1000})
    assert [s.id for s in big] == ["purchase-p1"]


def test_values_work_as_well_as_functions(define):
    @start_on(
        post_save,
        sender=Purchase,
        id=purchase_id,
        input=purchase_input,
        tags=["imported"],
        attributes={"source": "import"},
    )
    @define("static-links")
    def flow(ctx, input):
        return None

    Purchase.objects.create(reference="p3", total=1)
    status = wf.get_status("purchase-p3")
    assert (status.tags, status.attributes) == (["imported"], {"source": "import"})


def test_a_bad_attribute_raises_from_save_and_rolls_the_business_rows_back(define):
    @start_on(
        post_save,
        sender=Purchase,
        id=purchase_id,
        input=purchase_input,
        attributes=lambda instance, **kw: {"items": [instance.total]},  # a list: not searchable
    )
    @define("bad-attribute")
    def flow(ctx, input):
        return None

    with pytest.raises(TypeError, match="items"), transaction.atomic():
        Purchase.objects.create(reference="p4", total=1)
    assert not Purchase.objects.exists()
    assert not WorkflowInstance.objects.exists()
