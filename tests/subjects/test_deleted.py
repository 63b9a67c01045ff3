"""A subject whose row is deleted leaves its instances alone: no constraint ties them, the
instance runs on and ends normally, and the admin says the subject was deleted."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

import django_workflows as wf
from django_workflows.models import WorkflowInstance
from tests.testapp.models import Ledger, Order

pytestmark = pytest.mark.django_db


def test_an_instance_runs_on_and_ends_after_its_subjects_row_is_deleted(
    review, order, workflow_clock
):
    wf.start(review, {"id": order.id}, id="review", subject=order)
    wf.drain()
    Order.objects.filter(pk=order.pk).delete()

    wf.signal("review.verdict", "approved", key="3f9a1c")
    wf.drain()

    status = wf.get_status("review")
    assert status.status == "completed"
    assert status.output == {"order": "3f9a1c", "verdict": "approved"}
    assert status.subject == "testapp.order:3f9a1c"  # what it was about, still
    assert WorkflowInstance.objects.get(pk="review").subject is None  # the row is gone


def test_a_deleted_subjects_instances_are_still_found_by_its_key(review, workflow_clock):
    ledger = Ledger.objects.create(order_id="3f9a1c", total=2499)
    wf.start(review, {"id": "l"}, id="review", subject=ledger)
    kept = Ledger.objects.get(pk=ledger.pk)  # a copy that keeps its primary key
    ledger.delete()

    assert [s.id for s in wf.list_instances(subject=kept)] == ["review"]
    assert list(WorkflowInstance.objects.for_subject(kept).values_list("id", flat=True)) == [
        "review"
    ]


def test_the_admin_shows_a_deleted_subject_as_deleted(admin_client, review, order, workflow_clock):
    wf.start(review, {"id": order.id}, id="review", subject=order)
    Order.objects.filter(pk=order.pk).delete()

    url = reverse("admin:django_workflows_workflowinstance_change", args=[quote("review")])
    html = admin_client.get(url).content.decode()

    assert 'testapp.order:3f9a1c <span class="dw-none">(deleted)</span>' in html
    assert "/admin/testapp/order/3f9a1c/change/" not in html
