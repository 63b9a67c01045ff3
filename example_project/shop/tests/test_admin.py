"""The order's admin page lists the workflow instances about the order (WorkflowInstanceInline),
and an instance's page links back to its order."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.admin.utils import quote
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

import django_workflows
from shop import services
from shop.models import Charge, Order
from shop.workflows import fulfilment_id


def test_the_orders_page_lists_the_instances_about_the_order(
    client: Client, place: Callable[..., Order]
) -> None:
    order = place()
    django_workflows.drain()
    charge = Charge.objects.get(reference=order.id)
    # The refund support asks for is about the order the charge paid for.
    refund = services.request_refund(charge.id, "damaged")
    django_workflows.drain()
    client.force_login(User.objects.create_superuser("support", password="pw"))

    page = client.get(reverse("admin:shop_order_change", args=[order.id]))

    assert page.status_code == 200
    html = page.content.decode()
    instance_page = reverse(
        "admin:django_workflows_workflowinstance_change", args=[quote(refund.id)]
    )
    assert f'<a href="{instance_page}">{refund.id}</a>' in html
    assert fulfilment_id(order.id) in html  # the fulfilment, started by the order's post_save
    assert "refund-charge" in html and "refunded" in html  # its workflow and custom status
    assert "-DELETE" not in html  # read-only: nothing to delete, change or add

    back = client.get(instance_page).content.decode()
    order_page = reverse("admin:shop_order_change", args=[order.id])
    assert f'<a href="{order_page}">Order {order.id}</a> (shop.order:{order.id})' in back
