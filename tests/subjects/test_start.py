"""start(subject=obj) links an instance to the model instance it is about; InstanceStatus.subject,
list_instances(subject=) and WorkflowInstance.objects.for_subject() find it by that subject."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import django_workflows as wf
from django_workflows.models import WorkflowInstance
from tests.testapp.models import Execution, Ledger, Order, ProxyOrder

pytestmark = pytest.mark.django_db


def test_an_instance_started_with_a_subject_stores_its_content_type_and_primary_key(
    review, order, workflow_clock
):
    started = wf.start(review, {"id": order.id}, id="review-3f9a1c", subject=order)

    assert started.created
    row = WorkflowInstance.objects.get(pk="review-3f9a1c")
    assert (row.subject_type.app_label, row.subject_type.model) == ("testapp", "order")
    assert row.subject_id == "3f9a1c"
    assert row.subject == order


def test_the_status_names_the_subject_as_app_label_model_and_primary_key(
    review, order, ledger, workflow_clock
):
    wf.start(review, {"id": order.id}, id="by-order", subject=order)
    wf.start(review, {"id": order.id}, id="by-ledger", subject=ledger)

    assert wf.get_status("by-order").subject == "testapp.order:3f9a1c"
    assert wf.get_status("by-ledger").subject == f"testapp.ledger:{ledger.pk}"


def test_an_instance_started_without_a_subject_has_none(review, workflow_clock):
    wf.start(review, {"id": "x"}, id="no-subject")

    assert wf.get_status("no-subject").subject is None
    assert WorkflowInstance.objects.get(pk="no-subject").subject_type_id is None


def test_the_subject_stays_while_the_instance_runs_and_after_it_ends(review, order, workflow_clock):
    wf.start(review, {"id": order.id}, id="review", subject=order)
    wf.drain()
    wf.signal("review.verdict", "approved", key=order.id)
    wf.drain()

    status = wf.get_status("review")
    assert status.status == "completed"
    assert status.subject == "testapp.order:3f9a1c"


def test_list_instances_finds_the_instances_of_one_subject_oldest_first(
    review, order, workflow_clock
):
    other = Order.objects.create(id="77aa00")
    wf.start(review, {"id": order.id}, id="first", subject=order)
    workflow_clock.advance("1s")
    wf.start(review, {"id": other.id}, id="about-another", subject=other)
    wf.start(review, {"id": order.id}, id="unlinked")
    workflow_clock.advance("1s")
    wf.start(review, {"id": order.id}, id="second", subject=order)

    found = wf.list_instances(subject=order)

    assert [s.id for s in found] == ["first", "second"]
    assert {s.subject for s in found} == {"testapp.order:3f9a1c"}
    assert [s.id for s in wf.list_instances(subject=other)] == ["about-another"]


def test_list_instances_combines_the_subject_with_the_other_filters(review, order, workflow_clock):
    wf.start(review, {"id": order.id}, id="waiting", subject=order)
    workflow_clock.advance("1s")
    wf.start("flaky", {}, id="paid", subject=order)
    wf.drain()

    assert [s.id for s in wf.list_instances(subject=order, status="suspended")] == ["waiting"]
    assert [s.id for s in wf.list_instances(subject=order, workflow="flaky")] == ["paid"]
    assert [s.id for s in wf.list_instances(subject=order, limit=1, offset=1)] == ["paid"]


def test_for_subject_is_a_queryset_of_the_subjects_instances(review, order, workflow_clock):
    wf.start(review, {"id": order.id}, id="about", subject=order)
    wf.start(review, {"id": order.id}, id="unlinked")

    rows = WorkflowInstance.objects.for_subject(order)

    assert list(rows.values_list("id", flat=True)) == ["about"]
    assert rows.filter(status="pending").count() == 1  # an ordinary queryset, filtered further
    assert list(WorkflowInstance.objects.filter(workflow="order-review").for_subject(order)) == [
        WorkflowInstance.objects.get(pk="about")
    ]


def test_a_row_of_another_model_with_the_same_primary_key_is_another_subject(
    review, workflow_clock
):
    ledger = Ledger.objects.create(order_id="3f9a1c", total=2499)
    execution = Execution.objects.create(id=ledger.pk, instance_id="i", thread="t")
    same_text = Order.objects.create(id=str(ledger.pk))
    wf.start(review, {"id": "a"}, id="about-the-ledger", subject=ledger)

    assert [s.id for s in wf.list_instances(subject=ledger)] == ["about-the-ledger"]
    assert wf.list_instances(subject=execution) == []
    assert wf.list_instances(subject=same_text) == []
    assert not WorkflowInstance.objects.for_subject(execution).exists()
    assert not WorkflowInstance.objects.for_subject(same_text).exists()


def test_an_integer_and_a_string_primary_key_are_both_found(review, order, ledger, workflow_clock):
    wf.start(review, {"id": "i"}, id="by-int", subject=ledger)
    wf.start(review, {"id": "s"}, id="by-str", subject=order)

    # Found again from rows read back, whose keys are of the model's own type.
    assert [s.id for s in wf.list_instances(subject=Ledger.objects.get())] == ["by-int"]
    assert [s.id for s in wf.list_instances(subject=Order.objects.get())] == ["by-str"]
    assert WorkflowInstance.objects.get(pk="by-int").subject == ledger
    assert WorkflowInstance.objects.get(pk="by-str").subject == order


def test_a_proxy_models_row_is_its_concrete_models_subject(review, order, workflow_clock):
    wf.start(review, {"id": order.id}, id="by-proxy", subject=ProxyOrder.objects.get())

    assert wf.get_status("by-proxy").subject == "testapp.order:3f9a1c"
    assert [s.id for s in wf.list_instances(subject=order)] == ["by-proxy"]


def test_a_second_start_with_the_same_id_finds_the_first_and_keeps_its_subject(
    review, order, workflow_clock
):
    other = Order.objects.create(id="77aa00")
    wf.start(review, {"id": order.id}, id="review", subject=order)

    again = wf.start(review, {"id": order.id}, id="review", subject=other)

    assert not again.created
    assert wf.get_status("review").subject == "testapp.order:3f9a1c"


def test_an_instance_started_from_a_step_takes_a_subject_too(define, order, workflow_clock):
    @define("starts-a-review")
    def starts(ctx, input):
        def start_review(step):
            subject = Order.objects.get(pk=input["order"])
            return wf.start("flaky", {}, subject=subject).id

        return ctx.step("start-review", start_review)

    wf.start("starts-a-review", {"order": order.id}, id="parent")
    wf.drain()

    child = wf.get_status("parent").output
    assert wf.get_status(child).subject == "testapp.order:3f9a1c"


def test_a_start_without_a_subject_runs_no_content_type_query(review, workflow_clock):
    with CaptureQueriesContext(connection) as queries:
        wf.start(review, {"id": "x"}, id="plain")

    assert not [q for q in queries if "django_content_type" in q["sql"]]


def test_the_subjects_content_type_is_read_once_per_model(review, order, workflow_clock):
    from django.contrib.contenttypes.models import ContentType

    ContentType.objects.clear_cache()
    wf.start(review, {"id": order.id}, id="first", subject=order)
    with CaptureQueriesContext(connection) as queries:
        wf.start(review, {"id": order.id}, id="second", subject=order)
        wf.get_status("second")
        wf.list_instances(subject=order)

    assert not [q for q in queries if "django_content_type" in q["sql"]]


def test_a_fork_is_about_its_originals_subject(define, order, workflow_clock):
    @define("charges-once")
    def charges(ctx, input):
        ctx.step("charge", lambda step: "charged")
        return ctx.step("ship", lambda step: "shipped")

    wf.start("charges-once", {}, id="original", subject=order)
    wf.drain()

    forked = wf.fork("original", from_step="ship", new_id="rerun")

    assert wf.get_status(forked.id).subject == "testapp.order:3f9a1c"
    assert [s.id for s in wf.list_instances(subject=order)] == ["original", "rerun"]
