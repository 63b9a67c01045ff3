"""WorkflowInstanceInline on a business object's admin page, and the instance page's link back
to its subject: with the test client."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.utils import quote
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

import django_workflows as wf
from django_workflows.admin import STATUS_COLOURS
from django_workflows.models import WorkflowInstance
from tests.admin.conftest import codecs, staff_user  # noqa: F401 (codecs is a fixture)
from tests.testapp.models import Execution, Ledger, Order

pytestmark = pytest.mark.django_db

PREFIX = "django_workflows-workflowinstance-subject_type-subject_id"


def order_page(order: Order) -> str:
    return reverse("admin:testapp_order_change", args=[quote(order.pk)])


def instance_page(id: str) -> str:
    return reverse("admin:django_workflows_workflowinstance_change", args=[quote(id)])


@pytest.fixture
def reviewed(review, order, workflow_clock):
    """Two instances about the order (a waiting review, then a completed one) and one that is not."""
    wf.start(review, {"id": order.id}, id="review-1", subject=order)
    wf.drain()
    workflow_clock.advance("1h")
    wf.start(review, {"id": order.id}, id="review-2", subject=order)
    wf.drain()
    wf.signal("review.verdict", "approved", key=order.id)  # both wait for it: both complete
    wf.drain()
    workflow_clock.advance("1h")
    wf.start(review, {"id": order.id}, id="review-3", subject=order)
    wf.drain()
    wf.start(review, {"id": "other"}, id="not-about-it")
    return order


def inline_rows(html: str) -> list[str]:
    """The instance ids the inline lists, in its order."""
    return re.findall(r'<a href="/admin/django_workflows/workflowinstance/([^/]+)/change/">', html)


def test_the_objects_page_lists_its_instances_newest_first(admin_client, reviewed):
    response = admin_client.get(order_page(reviewed))

    assert response.status_code == 200
    html = response.content.decode()
    assert "Workflow instances" in html
    assert inline_rows(html) == ["review-3", "review-2", "review-1"]
    assert "not-about-it" not in html


def test_each_row_shows_its_status_badge_workflow_version_custom_status_and_update(
    admin_client, reviewed
):
    html = admin_client.get(order_page(reviewed)).content.decode()

    completed = f'style="background-color: {STATUS_COLOURS["completed"]}">completed</span>'
    suspended = f'style="background-color: {STATUS_COLOURS["suspended"]}">suspended</span>'
    assert html.count(completed) == 2
    assert html.count(suspended) == 1
    assert "order-review" in html
    assert "approved" in html and "awaiting-review" in html
    for column in ("Instance", "Status", "Workflow", "Version", "Custom status", "Updated at"):
        assert f">{column}" in html
    assert "django_workflows/admin.css" in html  # the badges' colours


def test_the_custom_status_is_shown_decoded_when_a_codec_encrypts_it(
    admin_client,
    review,
    order,
    workflow_clock,
    codecs,  # noqa: F811
):
    codecs.write()
    wf.start(review, {"id": order.id}, id="encrypted", subject=order)
    wf.drain()
    assert WorkflowInstance.objects.get(pk="encrypted").custom_status != "awaiting-review"

    html = admin_client.get(order_page(order)).content.decode()

    assert '<td class="field-custom_status_short">' in html
    assert "<p>awaiting-review</p>" in html


def test_each_row_links_to_the_instances_page(admin_client, reviewed):
    html = admin_client.get(order_page(reviewed)).content.decode()

    assert f'<a href="{instance_page("review-1")}">review-1</a>' in html
    assert admin_client.get(instance_page("review-1")).status_code == 200


def test_the_inline_offers_no_add_change_or_delete(admin_client, reviewed):
    response = admin_client.get(order_page(reviewed))
    html = response.content.decode()

    formset = next(
        f for f in response.context["inline_admin_formsets"] if f.formset.prefix == PREFIX
    )
    assert not formset.has_add_permission
    assert not formset.has_change_permission
    assert not formset.has_delete_permission
    assert formset.formset.max_num == 0  # the script adds no "Add another" link either
    assert f'name="{PREFIX}-0-DELETE"' not in html
    assert f'name="{PREFIX}-0-workflow"' not in html  # shown, not editable


def test_posting_the_objects_page_changes_no_instance(admin_client, reviewed):
    before = list(WorkflowInstance.objects.order_by("id").values())
    data = {
        "id": reviewed.id,
        "customer": "u_43",
        f"{PREFIX}-TOTAL_FORMS": "4",
        f"{PREFIX}-INITIAL_FORMS": "3",
        f"{PREFIX}-MIN_NUM_FORMS": "0",
        f"{PREFIX}-MAX_NUM_FORMS": "1000",
        "_save": "Save",
    }
    for index, id in enumerate(["review-3", "review-2", "review-1", "new"]):
        data.update(
            {
                f"{PREFIX}-{index}-id": id,
                f"{PREFIX}-{index}-workflow": "hijacked",
                f"{PREFIX}-{index}-status": "completed",
                f"{PREFIX}-{index}-version": "9",
                f"{PREFIX}-{index}-DELETE": "on",
            }
        )

    response = admin_client.post(order_page(reviewed), data)

    assert response.status_code == 302  # the order itself is saved
    assert Order.objects.get(pk=reviewed.pk).customer == "u_43"
    assert list(WorkflowInstance.objects.order_by("id").values()) == before


def test_the_inline_costs_the_same_queries_for_one_instance_or_many(
    admin_client, review, order, workflow_clock
):
    wf.start(review, {"id": order.id}, id="only", subject=order)
    admin_client.get(order_page(order))  # caches: the session, the content types
    with CaptureQueriesContext(connection) as one:
        admin_client.get(order_page(order))
    for n in range(10):
        wf.start(review, {"id": order.id}, id=f"more-{n}", subject=order)
    with CaptureQueriesContext(connection) as eleven:
        html = admin_client.get(order_page(order)).content.decode()

    assert len(inline_rows(html)) == 11
    assert len(eleven) == len(one)


def test_a_user_who_may_not_view_instances_does_not_see_the_inline(client, reviewed):
    from django.contrib.auth.models import Permission

    user = staff_user("clerk")
    user.user_permissions.set(Permission.objects.filter(codename="view_order"))
    client.force_login(user)

    html = client.get(order_page(reviewed)).content.decode()

    assert "review-1" not in html


def test_an_integer_keyed_objects_page_lists_its_instances(admin_client, review, workflow_clock):
    ledger = Ledger.objects.create(order_id="3f9a1c", total=2499)
    wf.start(review, {"id": "l"}, id="about-the-ledger", subject=ledger)

    url = reverse("admin:testapp_ledger_change", args=[ledger.pk])
    assert inline_rows(admin_client.get(url).content.decode()) == ["about-the-ledger"]


def test_the_instance_page_links_back_to_its_subject(admin_client, reviewed):
    html = admin_client.get(instance_page("review-1")).content.decode()

    assert f'<a href="{order_page(reviewed)}">Order 3f9a1c</a> (testapp.order:3f9a1c)' in html


def test_a_subject_whose_model_is_not_in_the_admin_is_plain_text(
    admin_client, review, workflow_clock
):
    execution = Execution.objects.create(instance_id="i", thread="t")
    wf.start(review, {"id": "e"}, id="about-an-execution", subject=execution)

    html = admin_client.get(instance_page("about-an-execution")).content.decode()

    label = f"testapp.execution:{execution.pk}"
    assert f"{execution} ({label})" in html
    assert "/admin/testapp/execution/" not in html


def test_an_instance_without_a_subject_shows_a_dash(admin_client, review, workflow_clock):
    wf.start(review, {"id": "x"}, id="plain")

    response = admin_client.get(instance_page("plain"))

    assert response.status_code == 200
    assert "testapp.order" not in response.content.decode()
