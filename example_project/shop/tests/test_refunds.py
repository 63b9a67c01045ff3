"""Refunds: up to 100 € at once, above that only once a manager resumes it in the admin."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

import django_workflows
from shop import services
from shop.models import Charge, Refund


def charge(amount: int) -> Charge:
    return Charge.objects.create(
        id=f"ch_{amount}",
        idempotency_key=f"key-{amount}",
        reference="o1",
        amount=amount,
        status=Charge.Status.SUCCEEDED,
    )


def test_a_small_refund_goes_through_at_once(clock) -> None:
    started = services.request_refund(charge(2499).id, "damaged")
    django_workflows.drain()
    assert django_workflows.get_status(started.id).status == "completed"
    assert Refund.objects.get().amount == 2499


def test_a_refund_above_100_euros_waits_for_the_managers_approval(clock, client) -> None:
    started = services.request_refund(charge(12_000).id, "never arrived")
    django_workflows.drain()
    status = django_workflows.get_status(started.id, journal=True)
    assert (status.status, status.custom_status) == ("suspended", "awaiting-approval")
    assert [(e.name, e.kind, e.status) for e in status.journal] == [
        ("manager-approval", "breakpoint", "pending")
    ]
    assert not Refund.objects.exists()

    manager = User.objects.create_superuser("manager", password="pw")
    client.force_login(manager)
    response = client.post(
        reverse("admin:django_workflows_workflowinstance_changelist"),
        {"action": "resume", "_selected_action": [started.id]},
        follow=True,
    )
    assert [str(m) for m in response.context["messages"]] == ["Resumed 1 instance."]
    django_workflows.drain()
    assert django_workflows.get_status(started.id).status == "completed"
    assert Refund.objects.get().amount == 12_000


def test_an_approval_before_the_refund_waits_is_refused(clock) -> None:
    started = services.request_refund(charge(50_000).id, "wrong size")
    with pytest.raises(django_workflows.WorkflowStateError):
        django_workflows.resume(started.id)
    django_workflows.drain()
    assert django_workflows.resume(started.id) == "manager-approval"
